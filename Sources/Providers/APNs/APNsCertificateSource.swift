import Foundation
import ProviderKit
import Send
import Support

/// An APNs app's certificate (SPEC §22), for teams that authenticate with one rather than a `.p8` key: a PKCS#12
/// (`.p12`, as Keychain Access exports it; its password, if any, in `password`), or a PEM certificate whose key is in
/// `key` or with the certificate. Each is a file (`certificate_file`, `certificate_password_file`,
/// `certificate_key_file`) or inline (`certificate`: the PEM, or the base64 of the `.p12`; `certificate_password`;
/// `certificate_key`), as an app stored in the database keeps them. It becomes the TLS client certificate of the
/// app's connections.
public struct APNsCertificateSource: Sendable {
    static let certificateField = SecretField("certificate", file: "certificate_file", binary: true)
    static let passwordField = SecretField("certificate_password", file: "certificate_password_file", password: true)
    static let keyField = SecretField("certificate_key", file: "certificate_key_file")
    static let fields = [certificateField, passwordField, keyField]

    var certificate: SecretSource
    var password: SecretSource?
    var key: SecretSource?

    /// From an `apps` entry's certificate fields; nil without a certificate.
    init?(_ entry: AppEntry) throws(ConfigurationError) {
        let app = entry.app
        for field in Self.fields {
            for key in [field.key] + (field.fileKey.map { [$0] } ?? []) where entry[key]?.stringValue == "" {
                throw ConfigurationError("APNs app \"\(app)\": \"\(key)\" is empty")
            }
        }
        let (password, key) = (entry.secret(Self.passwordField), entry.secret(Self.keyField))
        guard let certificate = entry.secret(Self.certificateField) else {
            guard password == nil, key == nil else {
                throw ConfigurationError("""
                    APNs app "\(app)": "certificate_password_file" and "certificate_key_file" need "certificate_file" \
                    (or their inline forms "certificate_password", "certificate_key" and "certificate")
                    """)
            }
            return nil
        }
        (self.certificate, self.password, self.key) = (certificate, password, key)
    }

    /// Where `source` of `field` is, for an error: its file's path, or the inline key.
    private static func place(_ source: SecretSource, _ field: SecretField) -> String {
        switch source {
        case .file(let path): path
        case .inline: "the inline \"\(field.key)\""
        }
    }

    /// The key `source` of `field` was given under.
    private static func given(_ source: SecretSource?, _ field: SecretField) -> String {
        if case .inline = source { return field.key }
        return field.fileKey ?? field.key
    }

    /// Reads the certificate and its key and checks them: they belong together, the certificate has not expired
    /// (one that expires within 30 days is logged as a warning), and its subject's user id, Apple's bundle id, is
    /// `topic` (a warning otherwise: Apple refuses other topics). Errors name the files, never a password or a key.
    func load(app: String, topic: String, now: Int64) throws(ConfigurationError) -> TLSClientIdentity {
        func invalid(_ text: String) -> ConfigurationError {
            ConfigurationError("APNs app \"\(app)\": \(text)")
        }
        func read(_ source: SecretSource, _ what: String) throws(ConfigurationError) -> [UInt8] {
            switch source {
            case .inline(let text): return Array(text.utf8)
            case .file(let path):
                guard let bytes = FileManager.default.contents(atPath: path) else {
                    throw invalid("cannot read \(what) file \(path)")
                }
                return Array(bytes)
            }
        }
        let file = Self.place(certificate, Self.certificateField)
        var contents = try read(certificate, "certificate")
        let isPEM = String(decoding: contents.prefix(4096), as: UTF8.self).contains("-----BEGIN ")
        if case .inline(let text) = certificate, !isPEM {
            guard let bytes = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !bytes.isEmpty else {
                throw invalid("\"certificate\" must be a PEM certificate or the base64 of a .p12 file")
            }
            contents = Array(bytes)
        }
        let identity: TLSClientIdentity
        do {
            if isPEM {
                guard password == nil else {
                    throw invalid("""
                        "\(Self.given(password, Self.passwordField))" is for a .p12 file, and \(file) is PEM: give \
                        its key unencrypted in "certificate_key_file" (or in the same file)
                        """)
                }
                let keyText = try key.map { key throws(ConfigurationError) in
                    String(decoding: try read(key, "certificate key"), as: UTF8.self)
                }
                identity = try TLSClientIdentity(
                    certificatePEM: String(decoding: contents, as: UTF8.self),
                    keyPEM: keyText ?? String(decoding: contents, as: UTF8.self))
            } else {
                guard key == nil else {
                    throw invalid("""
                        "\(Self.given(key, Self.keyField))" is for a PEM certificate, and \(file) is not PEM (a .p12 \
                        holds its key)
                        """)
                }
                var password = try password.map { password throws(ConfigurationError) in
                    String(decoding: try read(password, "certificate password"), as: UTF8.self)
                }
                while password?.last?.isNewline == true { password?.removeLast() }
                identity = try TLSClientIdentity(pkcs12: contents, password: password)
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            let source = isPEM ? file + (key.map { " with key \(Self.place($0, Self.keyField))" } ?? "") : file
            throw invalid("certificate \(source): \(error)")
        }
        for case .file(let path) in [isPEM ? key ?? certificate : certificate, password].compactMap({ $0 }) {
            AppEntry.warnIfOthersCanRead(path, "the APNs certificate's key or password file", app: app)
        }
        let expires = Date(timeIntervalSince1970: Double(identity.notAfterMillis) / 1000).ISO8601Format()
        guard identity.notAfterMillis > now else {
            throw invalid("the certificate in \(file) expired \(expires): make a new one on Apple's developer site")
        }
        if identity.notAfterMillis - now < TLSClientIdentity.expiryWarningMillis {
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
}
