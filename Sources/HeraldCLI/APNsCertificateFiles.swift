import Foundation
import Send
import Support

/// An APNs app's certificate (SPEC §22), for teams that authenticate with one rather than a `.p8` key: a PKCS#12
/// file (`.p12`, as Keychain Access exports it; its password, if any, in `passwordFile`), or a PEM certificate whose
/// key is in `keyFile` or in the same file. It becomes the TLS client certificate of the app's connections.
struct APNsCertificateFiles: Sendable {
    /// A certificate that expires sooner than this is warned about at start.
    static let expiryWarningMillis: Int64 = 30 * 86_400_000

    var file: String
    var passwordFile: String?
    var keyFile: String?

    init(file: String, passwordFile: String?, keyFile: String?) {
        (self.file, self.passwordFile, self.keyFile) = (file, passwordFile, keyFile)
    }

    /// From an `apps` entry's `certificate_file`, `certificate_password_file` and `certificate_key_file`; nil
    /// without `certificate_file`.
    init?(_ entry: JSON, app: String) throws {
        let passwordFile = entry["certificate_password_file"]?.stringValue
        let keyFile = entry["certificate_key_file"]?.stringValue
        guard let file = entry["certificate_file"]?.stringValue else {
            guard passwordFile == nil, keyFile == nil else {
                throw ServeConfiguration.Invalid(description: """
                    APNs app "\(app)": "certificate_password_file" and "certificate_key_file" need "certificate_file"
                    """)
            }
            return nil
        }
        for (key, value) in [("certificate_file", file), ("certificate_password_file", passwordFile ?? "-"),
                             ("certificate_key_file", keyFile ?? "-")] where value.isEmpty {
            throw ServeConfiguration.Invalid(description: "APNs app \"\(app)\": \"\(key)\" is empty")
        }
        self.init(file: file, passwordFile: passwordFile, keyFile: keyFile)
    }

    /// Reads the certificate and its key and checks them: they belong together, the certificate has not expired
    /// (one that expires within 30 days is logged as a warning), and its subject's user id, Apple's bundle id, is
    /// `topic` (a warning otherwise: Apple refuses other topics). Errors name the files, never a password or a key.
    func load(app: String, topic: String, now: Int64) throws -> TLSClientIdentity {
        func invalid(_ text: String) -> ServeConfiguration.Invalid {
            ServeConfiguration.Invalid(description: "APNs app \"\(app)\": \(text)")
        }
        guard let contents = FileManager.default.contents(atPath: file) else {
            throw invalid("cannot read certificate file \(file)")
        }
        let isPEM = String(decoding: contents.prefix(4096), as: UTF8.self).contains("-----BEGIN ")
        let identity: TLSClientIdentity
        do {
            if isPEM {
                guard passwordFile == nil else {
                    throw invalid("""
                        "certificate_password_file" is for a .p12 file, and \(file) is PEM: give its key unencrypted \
                        in "certificate_key_file" (or in the same file)
                        """)
                }
                let keyText = try keyFile.map { path in
                    guard let key = FileManager.default.contents(atPath: path) else {
                        throw invalid("cannot read certificate key file \(path)")
                    }
                    return String(decoding: key, as: UTF8.self)
                }
                identity = try TLSClientIdentity(
                    certificatePEM: String(decoding: contents, as: UTF8.self),
                    keyPEM: keyText ?? String(decoding: contents, as: UTF8.self))
            } else {
                guard keyFile == nil else {
                    throw invalid("""
                        "certificate_key_file" is for a PEM certificate, and \(file) is not PEM (a .p12 holds its key)
                        """)
                }
                identity = try TLSClientIdentity(pkcs12: Array(contents), password: try readPassword(invalid))
            }
        } catch let error as TLSClientIdentity.Invalid {
            let source = isPEM ? file + (keyFile.map { " with key \($0)" } ?? "") : file
            throw invalid("certificate \(source): \(error)")
        }
        for path in [isPEM ? keyFile ?? file : file, passwordFile].compactMap({ $0 }) {
            ServeConfiguration.warnIfOthersCanRead(path, "the APNs certificate's key or password file", app: app)
        }
        let expires = "\(Output.time(identity.notAfterMillis)) (\(Output.relative(identity.notAfterMillis, now: now)))"
        guard identity.notAfterMillis > now else {
            throw invalid("the certificate in \(file) expired \(expires): make a new one on Apple's developer site")
        }
        if identity.notAfterMillis - now < Self.expiryWarningMillis {
            Log.warn("the APNs certificate expires soon: make a new one on Apple's developer site", [
                "app": .string(app), "file": .string(file), "expires": .string(expires),
            ])
        }
        if let bundle = identity.subjectUserID, bundle != topic {
            Log.warn("the APNs certificate is for another bundle id than the app's topic: Apple refuses the topic", [
                "app": .string(app), "topic": .string(topic), "certificate_uid": .string(bundle),
            ])
        }
        return identity
    }

    /// The `.p12`'s password: the password file's text without its line ending; nil without a password file.
    private func readPassword(_ invalid: (String) -> ServeConfiguration.Invalid) throws -> String? {
        guard let passwordFile else { return nil }
        guard let bytes = FileManager.default.contents(atPath: passwordFile) else {
            throw invalid("cannot read certificate password file \(passwordFile)")
        }
        var password = String(decoding: bytes, as: UTF8.self)
        while password.last?.isNewline == true { password.removeLast() }
        return password
    }
}
