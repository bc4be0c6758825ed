/// The key that encrypts the secrets Herald stores (service-account keys, `.p8` and VAPID keys, HMS client secrets,
/// APNs certificates: SPEC §22): AES-256-GCM, a random 96-bit nonce per secret, each sealed secret one line of text
/// for a text column.
///
/// ```swift
/// let key = try SecretsKey(fileText: String(contentsOfFile: "/etc/herald/secrets.key"))
/// let stored = try key.seal(Array(p8.utf8), context: "apps/ios/key")   // "hs1:3f9c0a…:…"
/// let p8 = try key.open(stored, context: "apps/ios/key")
/// ```
///
/// A sealed secret is `hs1:<key id>:<base64url(nonce ‖ ciphertext ‖ tag)>`. `hs1` is the envelope's version; the key
/// id (`id`) says which key sealed it, so a store can tell a secret of an older key from a damaged one. The version,
/// the key id and the caller's `context` (where the secret belongs: a secret copied into another app's row does not
/// open there) are authenticated with it.
///
/// The key id is a fingerprint of the key — the first 8 bytes of HMAC-SHA-256(key, "herald secrets key id"), in hex —
/// which says nothing about the key itself. No error, description or log line holds the key or a secret.
public struct SecretsKey: Sendable, CustomStringConvertible {
    public static let keyLength = 32
    static let version = "hs1"

    private let bytes: [UInt8]
    /// 16 hex digits naming the key: what `status`, the logs and errors show.
    public let id: String

    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.keyLength else {
            throw CryptoError("a secrets key is \(Self.keyLength) bytes", detail: "")
        }
        self.bytes = bytes
        id = try HMACSHA256.authenticate([Array("herald secrets key id".utf8)], key: bytes).prefix(8)
            .map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// A new random key (libcrypto's CSPRNG).
    public static func generate() throws(CryptoError) -> SecretsKey {
        try SecretsKey(bytes: SecureRandom.bytes(keyLength))
    }

    public var description: String { "SecretsKey(id: \(id))" }

    // MARK: - The key file

    /// The key file's text: a comment line naming the key, then the key in base64url.
    public var fileText: String {
        """
        # herald secrets key (AES-256-GCM), id \(id): keep it secret and back it up; stored secrets need it
        \(Base64URL.encode(bytes))

        """
    }

    /// Reads a key file: lines starting with `#` and blank lines are ignored; one line of base64url, 32 bytes. The
    /// error says what is wrong without quoting the file.
    public init(fileText: String) throws(CryptoError) {
        let lines = fileText.split(whereSeparator: \.isNewline)
            .map { $0.filter { !$0.isWhitespace } }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard lines.count == 1, let bytes = Base64URL.decode(lines[0]), bytes.count == Self.keyLength else {
            throw CryptoError(
                "not a secrets key file (one line of base64url holding 32 bytes; `herald secrets-key --out FILE` "
                    + "makes one)", detail: "")
        }
        try self.init(bytes: bytes)
    }

    // MARK: - Sealing

    /// `secret` encrypted under this key for the place `context` names.
    public func seal(_ secret: [UInt8], context: String) throws(CryptoError) -> String {
        let nonce = try SecureRandom.bytes(AESGCM.nonceLength)
        var sealed = nonce
        try AESGCM.seal(secret, associatedData: associatedData(context), key: bytes, nonce: nonce, appendingTo: &sealed)
        return Self.version + ":" + id + ":" + Base64URL.encode(sealed)
    }

    /// The secret in `sealed`, which `seal` made with this key for the same `context`.
    public func open(_ sealed: String, context: String) throws(SecretsError) -> [UInt8] {
        let keyID = try Self.keyID(of: sealed)
        guard keyID == id else { throw SecretsError.otherKey(sealedWith: keyID, given: id) }
        let prefixLength = Self.version.utf8.count + id.utf8.count + 2
        let payload = String(decoding: sealed.utf8.dropFirst(prefixLength), as: UTF8.self)
        // The canonical text only: base64url's last character has spare bits that decoding would ignore.
        guard let bytes = Base64URL.decode(payload), Base64URL.encode(bytes) == payload,
              bytes.count >= AESGCM.nonceLength + AESGCM.tagLength
        else { throw SecretsError.malformed }
        let nonce = Array(bytes.prefix(AESGCM.nonceLength))
        let opened: [UInt8]?
        do {
            opened = try AESGCM.open(
                bytes.dropFirst(AESGCM.nonceLength), associatedData: associatedData(context), key: self.bytes,
                nonce: nonce)
        } catch {
            throw SecretsError.crypto(error)
        }
        guard let opened else { throw SecretsError.notAuthentic(keyID: id) }
        return opened
    }

    /// The id of the key that sealed `sealed`.
    public static func keyID(of sealed: String) throws(SecretsError) -> String {
        let parts = sealed.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == version, parts[1].utf8.count == 16,
              parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { throw SecretsError.malformed }
        return String(parts[1])
    }

    private func associatedData(_ context: String) -> [UInt8] {
        Array((Self.version + ":" + id + ":" + context).utf8)
    }
}

/// Why a secret cannot be stored or opened. Never holds the secret or the key.
public enum SecretsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No `--secrets-key-file`: storing a secret is refused.
    case noKey
    /// Sealed under another key than the one given (both named by their ids).
    case otherKey(sealedWith: String, given: String)
    /// Not a sealed secret of a version this Herald reads.
    case malformed
    /// The tag does not match: the stored text was changed or damaged, or sealed for another place.
    case notAuthentic(keyID: String)
    case crypto(CryptoError)

    public var description: String {
        switch self {
        case .noKey:
            "no secrets key: run `herald secrets-key --out /etc/herald/secrets.key` and start serve with "
                + "--secrets-key-file"
        case .otherKey(let sealedWith, let given):
            "the secret was sealed under secrets key \(sealedWith), not under the key given (\(given)): start serve "
                + "with the --secrets-key-file of key \(sealedWith)"
        case .malformed: "not a sealed secret (hs1:<key id>:<base64url>)"
        case .notAuthentic(let keyID):
            "the sealed secret does not authenticate under secrets key \(keyID): it was changed or damaged, or "
                + "belongs elsewhere"
        case .crypto(let error): "secrets: \(error)"
        }
    }
}
