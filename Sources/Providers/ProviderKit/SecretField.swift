import Foundation
import OAuth
import Support

/// A secret an app's entry carries (SPEC §22): inline under `key` (`"service_account": {…}`,
/// `"key": "-----BEGIN …"`), or as a file under `fileKey` that the instance reading the entry reads. An app stored in
/// the database keeps the secret sealed under `key`, never the path, so every instance has it.
public struct SecretField: Sendable {
    /// The inline key: `service_account`.
    public var key: String
    /// The key naming a file that holds it: `service_account_file`; nil when the secret is only inline.
    public var fileKey: String?
    /// Its file may be binary (a `.p12`): read as bytes, its text is the file's if it is PEM, else their base64.
    public var binary: Bool
    /// A password: shown without a fingerprint, since a SHA-256 of a password can be guessed back.
    public var isPassword: Bool

    public init(_ key: String, file fileKey: String? = nil, binary: Bool = false, password: Bool = false) {
        (self.key, self.fileKey, self.binary, self.isPassword) = (key, fileKey, binary, password)
    }
}

/// Where an app's secret comes from: a file, or its text (inline in the entry, or opened from the database).
public enum SecretSource: Sendable {
    case file(String)
    case inline(String)

    /// The secret's text; a file that other users may read gets a warning naming `what`. A `binary` file that is not
    /// PEM (a `.p12`) gives the base64 of its bytes.
    public func text(app: String, what: String, binary: Bool = false) throws(ConfigurationError) -> String {
        switch self {
        case .inline(let text):
            return text
        case .file(let path):
            let bytes = FileManager.default.contents(atPath: path)
            guard let bytes, let text = String(data: bytes, encoding: .utf8) ?? (binary ? "" : nil) else {
                throw ConfigurationError("app \"\(app)\": cannot read key file \(path) (\(what))")
            }
            AppEntry.warnIfOthersCanRead(path, "the \(what)", app: app)
            return binary && !text.contains("-----BEGIN ") ? bytes.base64EncodedString() : text
        }
    }

    /// Where it is, for an error message: the file's path, or "inline".
    public var place: String {
        switch self {
        case .file(let path): path
        case .inline: "the inline key"
        }
    }
}

extension AppEntry {
    /// `field`'s secret: its inline value (a string as is, anything else as its JSON text), else its file.
    public func secret(_ field: SecretField) -> SecretSource? {
        if let value = self[field.key] { return .inline(value.stringValue ?? value.serialized()) }
        return field.fileKey.flatMap { path($0) }.map(SecretSource.file)
    }
}
