import OAuth
import Queue

/// The secret of a per-tenant API token (SPEC §22): `hrld_`, the token's public id (12 hex digits), `_`, and 32
/// random bytes from libcrypto's CSPRNG in base64url (43 characters) — 61 characters a secret scanner can recognise
/// and an operator can match to `herald api-tokens list` by its id. It is shown once, when the token is made; the
/// database keeps its SHA-256 only.
///
/// ```swift
/// let (record, secret) = try APITokenSecret.issue(apps: ["shop"], role: .send, name: "shop-backend", now: now)
/// // secret: "hrld_3f9c0a1b2d4e_Qm9…", record.secretSHA256 == APITokenSecret.hash(Array(secret.utf8))
/// ```
public enum APITokenSecret {
    public static let prefix = "hrld_"
    static let idLength = 12
    static let randomLength = 32
    /// `prefix`, the id, `_`, and 43 base64url characters.
    static let length = prefix.utf8.count + idLength + 1 + 43

    /// A new token for `apps` in `role`: the record to store, and the secret to show once. Refuses (400
    /// `InvalidParameters`) no app, a malformed app name, or a label longer than 100 characters or with control
    /// characters; an app named twice counts once.
    public static func issue(
        apps: [String], role: APITokenRole, name: String?, now: Int64
    ) throws -> (record: APITokenRecord, secret: String) {
        var unique: [String] = []
        for app in apps where !unique.contains(app) {
            guard MessageValidator.isValidAppName(app) else {
                throw APIError.invalidParameters(
                    "\"\(app.prefix(100))\" is not an app name: 1 to 100 characters from [A-Za-z0-9._-]")
            }
            unique.append(app)
        }
        guard !unique.isEmpty else { throw APIError.invalidParameters("give the apps the token acts for") }
        if let name, name.isEmpty || name.count > 100 || name.unicodeScalars.contains(where: { $0.value < 0x20 }) {
            throw APIError.invalidParameters("a token's name is 1 to 100 characters, none of them a control character")
        }
        let id = try SecureRandom.bytes(idLength / 2).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        let secret = prefix + id + "_" + Base64URL.encode(try SecureRandom.bytes(randomLength))
        let record = APITokenRecord(
            id: id, secretSHA256: hex(SHA256.digest(Array(secret.utf8))), name: name, role: role, apps: unique,
            createdAt: now)
        return (record, secret)
    }

    /// The SHA-256 of `presented` when it is shaped like a token's secret, else nil (nothing to hash or look up).
    static func digest(_ presented: [UInt8]) -> [UInt8]? {
        guard presented.count == length, presented.starts(with: prefix.utf8) else { return nil }
        return SHA256.digest(presented)
    }

    /// 64 lowercase hex digits, as `api_tokens.secret_sha256` holds a digest.
    static func hex(_ digest: [UInt8]) -> String {
        digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// `hex` read back; nil for anything else.
    static func digest(hex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 2 * SHA256.length else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(SHA256.length)
        for pair in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[pair...pair + 1], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
