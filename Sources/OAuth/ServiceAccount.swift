import Foundation
import Support

/// A Google service-account key file (`"type": "service_account"`), read and checked, with its private key parsed.
///
/// ```swift
/// let account = try ServiceAccount(contentsOf: "/etc/herald/firebase.json")
/// account.clientEmail   // "herald@my-project.iam.gserviceaccount.com"
/// account.projectID     // "my-project"
/// ```
///
/// The PEM text is not kept: only libcrypto's parsed key, whose `description` names its size. No error message
/// quotes the file's contents.
public struct ServiceAccount: Sendable, CustomStringConvertible {
    public var clientEmail: String
    public var projectID: String?
    public var tokenURI: String?
    public var privateKeyID: String?
    public var privateKey: RSAPrivateKey

    public init(clientEmail: String, privateKey: RSAPrivateKey, projectID: String?, tokenURI: String?,
                privateKeyID: String? = nil) {
        self.clientEmail = clientEmail
        self.privateKey = privateKey
        self.projectID = projectID
        self.tokenURI = tokenURI
        self.privateKeyID = privateKeyID
    }

    /// Why a service-account file cannot be used; `description` says exactly what is wrong, for a start-up refusal.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Reads and checks the file at `path`.
    public init(contentsOf path: String) throws(Invalid) {
        let bytes: [UInt8]
        switch Self.readFile(path) {
        case .success(let read): bytes = read
        case .failure(let reason): throw Invalid("cannot read service account file \(path): \(reason)")
        }
        try self.init(json: bytes, source: "service account file \(path)")
    }

    /// The file's bytes, or the system's words for why not (`No such file or directory`, `Permission denied`,
    /// `Is a directory`); a key file is a few KiB, anything over 1 MiB is not one.
    private static func readFile(_ path: String) -> Result<[UInt8], ReadFailure> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(ReadFailure(errno: errno)) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ReadFailure(errno: errno))
            }
            if count == 0 { return .success(bytes) }
            bytes += chunk.prefix(count)
            if bytes.count > 1 << 20 { return .failure(ReadFailure(text: "larger than 1 MiB, not a key file")) }
        }
    }

    private struct ReadFailure: Error, CustomStringConvertible {
        var description: String
        init(errno: Int32) { description = String(cString: strerror(errno)) }
        init(text: String) { description = text }
    }

    /// Checks a service-account key's JSON; `source` names it in error messages.
    public init(json bytes: [UInt8], source: String = "service account") throws(Invalid) {
        let object: JSON
        do {
            object = try JSON.parse(bytes)
        } catch {
            throw Invalid("\(source) is not JSON: \(error)")
        }
        guard object.objectValue != nil else { throw Invalid("\(source) must hold a JSON object") }
        if let type = object["type"] {
            guard let text = type.stringValue, text == "service_account" else {
                let shown = type.stringValue.map { "\"\($0.prefix(40))\"" } ?? "not a string"
                throw Invalid("\(source) has \"type\" \(shown): Herald needs a \"service_account\" key "
                    + "(Firebase console → Project settings → Service accounts → Generate new private key)")
            }
        }
        func text(_ key: String, required: Bool) throws(Invalid) -> String? {
            guard let value = object[key], !value.isNull else {
                if required { throw Invalid("\(source) has no \"\(key)\"") }
                return nil
            }
            guard let string = value.stringValue, !string.isEmpty else {
                throw Invalid("\(source): \"\(key)\" must be a non-empty string")
            }
            return string
        }
        let clientEmail = try text("client_email", required: true)!
        let pem = try text("private_key", required: true)!
        let key: RSAPrivateKey
        do {
            key = try RSAPrivateKey(pem: pem)
        } catch {
            throw Invalid("\(source): \"private_key\" cannot be used: \(error)")
        }
        let tokenURI = try text("token_uri", required: false)
        if let tokenURI { try Self.checkURL(tokenURI, name: "token_uri", source: source) }
        self.init(clientEmail: clientEmail, privateKey: key, projectID: try text("project_id", required: false),
                  tokenURI: tokenURI, privateKeyID: try text("private_key_id", required: false))
    }

    /// `http://` or `https://` with a host.
    public static func checkURL(_ text: String, name: String, source: String) throws(Invalid) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = url.host, !host.isEmpty
        else { throw Invalid("\(source): \"\(name)\" must be an http(s) URL, got \"\(text.prefix(200))\"") }
    }

    /// The JSON of a service-account file, for tests and the sandbox: the private key as PKCS#8 PEM.
    public func json() -> String {
        var members: [(key: String, value: JSON)] = [("type", .string("service_account"))]
        if let projectID { members.append(("project_id", .string(projectID))) }
        if let privateKeyID { members.append(("private_key_id", .string(privateKeyID))) }
        members.append(("private_key", .string(privateKey.pkcs8PEM())))
        members.append(("client_email", .string(clientEmail)))
        if let tokenURI { members.append(("token_uri", .string(tokenURI))) }
        return JSON.object(members).serialized()
    }

    public var description: String {
        "ServiceAccount(\(clientEmail), project \(projectID ?? "-"), key \(privateKey))"
    }
}
