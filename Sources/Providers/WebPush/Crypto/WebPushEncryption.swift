import Ingest
import OAuth

/// Web Push message encryption (RFC 8291): the `aes128gcm` content coding (RFC 8188) with keys agreed by ECDH on
/// P-256 between a fresh key pair of the sender's and the browser's subscription key, mixed with the subscription's
/// auth secret.
///
/// ```swift
/// let body = try WebPushEncryption.encrypt(Array(#"{"title":"Hi"}"#.utf8), to: subscription.keys)
/// // POST body with Content-Encoding: aes128gcm
/// let plaintext = try WebPushEncryption.decrypt(body, privateKey: subscriber.privateKey,
///                                               auth: subscriber.keys.auth)   // the browser's side
/// ```
///
/// The body is one record: a header of 86 bytes — salt (16), record size (4, big-endian), key id length (1 = 65),
/// the sender's ephemeral public key (65) — then the plaintext, the padding delimiter 0x02 and the 16-byte tag,
/// encrypted with AES-128-GCM. With the 4096 bytes a push service must accept, that leaves 3993 for the plaintext.
///
/// Keys (RFC 8291 §3.3, §3.4; RFC 8188 §2.2, §2.3), each HKDF-SHA-256:
/// - IKM = HKDF(salt: auth, IKM: ECDH secret, info: "WebPush: info" ‖ 0x00 ‖ ua_public ‖ as_public, 32 bytes)
/// - CEK = HKDF(salt: salt, IKM, info: "Content-Encoding: aes128gcm" ‖ 0x00, 16 bytes)
/// - NONCE = HKDF(salt: salt, IKM, info: "Content-Encoding: nonce" ‖ 0x00, 12 bytes)
///
/// Related documentation: [RFC 8291](https://www.rfc-editor.org/rfc/rfc8291),
/// [RFC 8188](https://www.rfc-editor.org/rfc/rfc8188).
public enum WebPushEncryption {
    /// The `rs` of every body: one record, whatever the plaintext's size.
    public static let recordSize = 4096
    /// 4096 (what every push service accepts) − 86 (header) − 1 (padding delimiter) − 16 (tag).
    public static let maximumPlaintext = 3993

    static let saltLength = 16
    static let headerLength = saltLength + 4 + 1 + P256Curve.uncompressedPointLength
    private static let paddingDelimiter: UInt8 = 0x02

    /// `plaintext` encrypted for the holder of `keys`: a fresh ephemeral P-256 key pair and a fresh 16-byte random
    /// salt per call. Throws when `plaintext` is longer than `maximumPlaintext`.
    public static func encrypt(_ plaintext: [UInt8], to keys: WebPushKeys) throws(CryptoError) -> [UInt8] {
        try checkLength(plaintext)
        return try seal(plaintext, to: keys, salt: SecureRandom.bytes(saltLength), ephemeral: P256ECDHKey.generate())
    }

    /// The same with a given salt and ephemeral key, as RFC 8291's example (Appendix A) fixes them. Never reuse a
    /// salt and key pair for a real message.
    public static func encrypt(
        _ plaintext: [UInt8], to keys: WebPushKeys, salt: [UInt8], ephemeral: P256PrivateKey
    ) throws(CryptoError) -> [UInt8] {
        try checkLength(plaintext)
        guard salt.count == saltLength else {
            throw CryptoError("a Web Push salt is \(saltLength) bytes, not \(salt.count)", detail: "")
        }
        return try seal(plaintext, to: keys, salt: salt, ephemeral: ephemeral.agreement)
    }

    /// The receiver's side — the simulator's push service and tests: the header read, the keys derived with the
    /// receiver's `privateKey` and `auth` secret, the record decrypted and its padding removed. Throws, saying which,
    /// for a malformed body, a tag that does not verify (other keys, or changed bytes) or bad padding.
    public static func decrypt(
        _ body: [UInt8], privateKey: P256PrivateKey, auth: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        guard auth.count == WebPushKeys.authLength else {
            throw CryptoError("a Web Push auth secret is \(WebPushKeys.authLength) bytes, not \(auth.count)",
                              detail: "")
        }
        guard body.count >= saltLength + 5 else {
            throw malformed("\(body.count) bytes, shorter than an aes128gcm header")
        }
        let salt = Array(body[0..<saltLength])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let keyIDLength = Int(body[20])
        guard keyIDLength == P256Curve.uncompressedPointLength else {
            throw malformed("its key id is \(keyIDLength) bytes; Web Push's is the sender's 65-byte P-256 point")
        }
        guard body.count >= headerLength else {
            throw malformed("\(body.count) bytes, shorter than its \(headerLength)-byte header")
        }
        let senderPublic = Array(body[21..<headerLength])
        guard let sender = P256Point(uncompressed: senderPublic) else {
            throw malformed("its key id is not an uncompressed point on P-256")
        }
        guard recordSize >= 18 else { throw malformed("its record size \(recordSize) is below the minimum of 18") }
        let record = body[headerLength...]
        guard record.count > AESGCM.tagLength else {
            throw malformed("its record of \(record.count) bytes is too short for the tag and padding delimiter")
        }
        guard record.count <= recordSize else {
            throw malformed("it holds more than one record (\(record.count) bytes after the header, record size "
                + "\(recordSize)); Web Push uses one")
        }
        let secret = try privateKey.agreement.sharedSecret(with: sender)
        let (key, nonce) = try contentKeyAndNonce(
            secret: secret, auth: auth, receiverPublic: privateKey.agreement.publicPoint, senderPublic: senderPublic,
            salt: salt)
        guard var padded = try AESGCM.open(record, key: key, nonce: nonce) else {
            throw malformed("it does not decrypt: the AES-GCM tag does not match (other keys, or changed bytes)")
        }
        guard let delimiter = padded.lastIndex(where: { $0 != 0 }) else {
            throw malformed("its record has no padding delimiter")
        }
        guard padded[delimiter] == paddingDelimiter else {
            throw malformed("its padding delimiter is \(padded[delimiter]), not 2 (the last record's)")
        }
        padded.removeSubrange(delimiter...)
        return padded
    }

    // MARK: - Internals

    private static func checkLength(_ plaintext: [UInt8]) throws(CryptoError) {
        guard plaintext.count <= maximumPlaintext else {
            throw CryptoError("a Web Push payload is \(plaintext.count) bytes; at most \(maximumPlaintext) fit "
                + "the 4096-byte record every push service accepts", detail: "")
        }
    }

    private static func seal(
        _ plaintext: [UInt8], to keys: WebPushKeys, salt: [UInt8], ephemeral: P256ECDHKey
    ) throws(CryptoError) -> [UInt8] {
        guard let receiver = P256Point(uncompressed: keys.p256dh) else {
            throw CryptoError("keys.p256dh is not a P-256 public key (65-byte uncompressed point)", detail: "")
        }
        let secret = try ephemeral.sharedSecret(with: receiver)
        let (key, nonce) = try contentKeyAndNonce(
            secret: secret, auth: keys.auth, receiverPublic: keys.p256dh, senderPublic: ephemeral.publicPoint,
            salt: salt)
        var body = salt
        body.reserveCapacity(headerLength + plaintext.count + 1 + AESGCM.tagLength)
        body += [UInt8(recordSize >> 24 & 0xff), UInt8(recordSize >> 16 & 0xff), UInt8(recordSize >> 8 & 0xff),
                 UInt8(recordSize & 0xff), UInt8(P256Curve.uncompressedPointLength)]
        body += ephemeral.publicPoint
        try AESGCM.seal(plaintext, trailer: [paddingDelimiter], key: key, nonce: nonce, appendingTo: &body)
        return body
    }

    private static let keyInfoLabel = Array("WebPush: info\0".utf8)
    private static let contentKeyInfo = Array("Content-Encoding: aes128gcm\0".utf8)
    private static let nonceInfo = Array("Content-Encoding: nonce\0".utf8)

    /// RFC 8291 §3.3 and §3.4: the content encryption key and the nonce (of the first and only record).
    static func contentKeyAndNonce(
        secret: [UInt8], auth: [UInt8], receiverPublic: [UInt8], senderPublic: [UInt8], salt: [UInt8]
    ) throws(CryptoError) -> (key: [UInt8], nonce: [UInt8]) {
        let keyCombining = try HKDF.extract(salt: auth, inputKeyingMaterial: secret)
        let inputKeyingMaterial = try HKDF.expand(
            pseudorandomKey: keyCombining, info: keyInfoLabel + receiverPublic + senderPublic, length: 32)
        let pseudorandomKey = try HKDF.extract(salt: salt, inputKeyingMaterial: inputKeyingMaterial)
        return (try HKDF.expand(pseudorandomKey: pseudorandomKey, info: contentKeyInfo, length: 16),
                try HKDF.expand(pseudorandomKey: pseudorandomKey, info: nonceInfo, length: 12))
    }

    private static func malformed(_ reason: String) -> CryptoError {
        CryptoError("not a Web Push message: \(reason)", detail: "")
    }
}
