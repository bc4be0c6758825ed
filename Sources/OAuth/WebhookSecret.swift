import Foundation

/// A Standard Webhooks secret (`whsec_` + base64 of the key) and the signature it makes: `v1,` + base64 of
/// HMAC-SHA-256 over `<webhook-id>.<webhook-timestamp>.<body>`, as the spec and its reference libraries compute it.
///
/// ```swift
/// let secret = try WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
/// let signature = try secret.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330,
///                                      body: Array(#"{"test": 2432232314}"#.utf8))
/// // "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
/// ```
///
/// Related documentation: [Standard Webhooks, "Signature scheme"](https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md).
public struct WebhookSecret: Sendable {
    private let key: [UInt8]

    public static let prefix = "whsec_"
    /// The spec asks for secrets of 24 to 64 random bytes; Herald makes 32.
    public static let minimumBytes = 24

    /// Reads a secret as a file holds it: surrounding whitespace ignored, `whsec_` then standard base64.
    /// - Throws: `CryptoError` naming what is wrong (never the secret itself).
    public init(text: String) throws(CryptoError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(Self.prefix) else {
            throw CryptoError("webhook secret", detail: "does not start with \(Self.prefix)")
        }
        guard let key = Data(base64Encoded: String(trimmed.dropFirst(Self.prefix.count))) else {
            throw CryptoError("webhook secret", detail: "is not base64 after \(Self.prefix)")
        }
        guard key.count >= Self.minimumBytes else {
            throw CryptoError(
                "webhook secret", detail: "holds \(key.count) bytes; at least \(Self.minimumBytes) are needed")
        }
        self.key = Array(key)
    }

    /// A new secret's text: `whsec_` and the base64 of 32 random bytes.
    public static func generate() throws(CryptoError) -> String {
        prefix + Data(try SecureRandom.bytes(32)).base64EncodedString()
    }

    /// The `webhook-signature` header's value for this id, timestamp (Unix seconds) and body.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) throws(CryptoError) -> String {
        let signed = try HMACSHA256.authenticate([Array("\(id).\(timestamp).".utf8), body], key: key)
        return "v1," + Data(signed).base64EncodedString()
    }
}
