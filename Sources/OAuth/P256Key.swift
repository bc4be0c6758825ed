import CCrypto

/// A NIST P-256 private key held by libcrypto: it signs ES256 (ECDSA with SHA-256), what APNs' provider tokens
/// (`.p8` keys from Apple) and Web Push's VAPID (RFC 8292) are signed with.
///
/// ```swift
/// let key = try P256PrivateKey(pem: String(contentsOfFile: "AuthKey_ABC123DEFG.p8"))
/// let signature = try key.signES256(Array("header.claims".utf8))   // 64 bytes: r ‖ s
/// key.publicKey.verifyES256(signature, of: Array("header.claims".utf8))   // true
/// ```
///
/// JWS (RFC 7518 §3.4) wants the signature as the two 32-byte integers r and s back to back, not libcrypto's DER
/// `ECDSA-Sig-Value`: `signES256` converts. The key also agrees on Web Push's ECDH secrets (`sharedSecret(with:)`),
/// the receiver's side of RFC 8291. The key material stays inside libcrypto; nothing here prints it.
public final class P256PrivateKey: @unchecked Sendable, CustomStringConvertible {
    let pointer: OpaquePointer
    /// The same key as an `EC_KEY`, for ECDH at a third of the EVP interface's cost (see `P256ECDHKey`).
    public let agreement: P256ECDHKey

    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, Apple's `.p8`) or SEC1 (`BEGIN EC PRIVATE KEY`, what
    /// `openssl ecparam -genkey` writes). Throws for anything else, an encrypted key, or a key not on P-256.
    public convenience init(pem: String) throws(CryptoError) {
        self.init(taking: try PEMKey.readPrivate(pem, refusal: "not a P-256 key: ES256 needs one", accept: Self.isP256))
    }

    /// The key whose private scalar is `rawScalar`, 32 bytes big-endian: a JWK's `d`, as RFC 8291's example gives its
    /// keys. Throws unless the scalar is between 1 and the group order less one.
    public convenience init(rawScalar: [UInt8]) throws(CryptoError) {
        self.init(taking: try Self.keyPair(scalar: rawScalar))
    }

    /// A new random key, for tests, the sandbox and `herald webpush-keys`.
    public static func generate() throws(CryptoError) -> P256PrivateKey {
        ERR_clear_error()
        guard let key = herald_p256_generate() else { throw CryptoError.drain("P-256 key generation failed") }
        return P256PrivateKey(taking: key)
    }

    private init(taking pointer: OpaquePointer) {
        self.pointer = pointer
        agreement = P256ECDHKey(copying: pointer)
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    static func isP256(_ key: OpaquePointer) -> Bool {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 32)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return false }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
    }

    /// The ES256 signature of `message`: r ‖ s, 32 bytes each, big-endian.
    public func signES256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let der = try PEMKey.signSHA256(message, with: pointer)
        guard let raw = P256Signature.raw(fromDER: der) else {
            throw CryptoError("ECDSA signature not in DER", detail: "")
        }
        return raw
    }

    public var publicKey: P256PublicKey {
        P256PublicKey(taking: PEMKey.publicCopy(of: pointer))
    }

    /// The ECDH shared secret with the holder of `peer`, a 65-byte uncompressed P-256 point (0x04 ‖ x ‖ y): the x
    /// coordinate of the product, 32 bytes. Throws for a compressed point or one that is not on P-256.
    public func sharedSecret(with peer: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let point = P256Point(uncompressed: peer) else {
            throw CryptoError("not a P-256 public key (65-byte uncompressed point)", detail: "")
        }
        return try agreement.sharedSecret(with: point)
    }

    /// An `EVP_PKEY` from a raw private scalar, its public point computed here (OpenSSL 3.0's `EVP_PKEY_fromdata`
    /// does not derive it).
    private static func keyPair(scalar: [UInt8]) throws(CryptoError) -> OpaquePointer {
        let refusal = CryptoError("not a P-256 private key (a 32-byte scalar from 1 to the group order less one)",
                                  detail: "")
        guard scalar.count == 32, let secret = BN_secure_new() else { throw refusal }
        defer { BN_clear_free(secret) }
        guard BN_bin2bn(scalar, 32, secret) != nil, BN_is_zero(secret) == 0,
              BN_cmp(secret, EC_GROUP_get0_order(P256Curve.group)) < 0
        else { throw refusal }
        ERR_clear_error()
        guard let point = EC_POINT_new(P256Curve.group) else { throw CryptoError.drain("EC_POINT_new failed") }
        defer { EC_POINT_free(point) }
        BN_set_flags(secret, BN_FLG_CONSTTIME)
        guard EC_POINT_mul(P256Curve.group, point, secret, nil, nil, nil) == 1 else {
            throw CryptoError.drain("P-256 public point computation failed")
        }
        let publicPoint = P256Curve.uncompressed(point)
        guard let key = herald_p256_from_scalar(secret, publicPoint, publicPoint.count) else {
            throw CryptoError.drain("P-256 key from a raw scalar failed")
        }
        return key
    }

    /// The key as PKCS#8 PEM (`BEGIN PRIVATE KEY`), as in Apple's `.p8` files. Tests and the sandbox write it;
    /// nothing logs it.
    public func pkcs8PEM() -> String {
        withMemoryBIO { PEM_write_bio_PrivateKey($0, pointer, nil, nil, 0, nil, nil) }
    }

    /// Never the key.
    public var description: String { "P256PrivateKey" }
}

/// A P-256 public key: it checks ES256 signatures, and is the uncompressed point a Web Push page passes as
/// `applicationServerKey`.
public final class P256PublicKey: @unchecked Sendable, CustomStringConvertible {
    let pointer: OpaquePointer

    fileprivate init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Reads a PEM `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo) on P-256.
    public init(pem: String) throws(CryptoError) {
        pointer = try PEMKey.readPublic(pem, refusal: "not a P-256 public key", accept: P256PrivateKey.isP256)
    }

    /// From its uncompressed point (VAPID's `k`, a subscription's `p256dh`), checked to be on the curve.
    public convenience init(uncompressedPoint point: [UInt8]) throws(CryptoError) {
        guard point.count == 65, point[0] == 4 else {
            throw CryptoError("not a P-256 public key (65-byte uncompressed point)", detail: "")
        }
        // SubjectPublicKeyInfo for id-ecPublicKey on prime256v1, then the point as its BIT STRING.
        let der = Self.subjectPublicKeyInfoPrefix + point
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { throw CryptoError.drain("not a point on P-256") }
        self.init(taking: key)
    }

    private static let subjectPublicKeyInfoPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
        0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Whether `signature` (r ‖ s) is this key's ES256 signature of `message`.
    public func verifyES256(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        guard let der = P256Signature.der(fromRaw: signature) else { return false }
        return PEMKey.verifySHA256(der, of: message, with: pointer)
    }

    /// The uncompressed point: 0x04 ‖ x ‖ y, 65 bytes.
    public var uncompressedPoint: [UInt8] {
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        let status = EVP_PKEY_get_octet_string_param(pointer, "encoded-pub-key", &point, point.count, &length)
        precondition(status == 1 && length == 65, "a P-256 key without its uncompressed point")
        return point
    }

    /// `BEGIN PUBLIC KEY` PEM.
    public func pem() -> String {
        withMemoryBIO { PEM_write_bio_PUBKEY($0, pointer) }
    }

    public var description: String { "P256PublicKey" }
}

/// ES256 signatures between libcrypto's DER `ECDSA-Sig-Value` (SEQUENCE of two INTEGERs) and JWS' r ‖ s.
enum P256Signature {
    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        guard let signature = der.withUnsafeBufferPointer({ buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }) else { return nil }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        guard BN_bn2binpad(ECDSA_SIG_get0_r(signature), &raw, 32) == 32 else { return nil }
        let written = raw.withUnsafeMutableBufferPointer {
            BN_bn2binpad(ECDSA_SIG_get0_s(signature), $0.baseAddress! + 32, 32)
        }
        return written == 32 ? raw : nil
    }

    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &der)
        guard length > 0, let der else { return nil }
        defer { CRYPTO_free(der, nil, 0) }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }
}
