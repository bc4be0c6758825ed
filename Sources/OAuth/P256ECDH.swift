import CCrypto

/// NIST P-256 as libcrypto's `EC_GROUP`, made once: building it costs about 9 µs, as much as a key pair.
///
/// An `EC_GROUP` is only read after it is made (every function below takes it `const`), so one serves all threads.
public enum P256Curve {
    nonisolated(unsafe) static let group: OpaquePointer = {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            fatalError("libcrypto has no P-256 (EC_GROUP_new_by_curve_name failed)")
        }
        return group
    }()

    /// The length of an uncompressed point: 0x04 ‖ x ‖ y.
    public static let uncompressedPointLength = 65

    /// The uncompressed encoding of `point`.
    static func uncompressed(_ point: OpaquePointer) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: uncompressedPointLength)
        let written = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &bytes, bytes.count, nil)
        precondition(written == uncompressedPointLength, "a P-256 point without an uncompressed encoding")
        return bytes
    }
}

/// A public point on P-256, read from its 65-byte uncompressed encoding and checked to lie on the curve (P-256's
/// cofactor is 1, so a point on the curve is in the group and an invalid-curve attack has nothing to work with).
public final class P256Point {
    let pointer: OpaquePointer

    /// Nil unless `bytes` is 0x04 ‖ x ‖ y with x and y below the field prime and the point on the curve. Compressed
    /// points (0x02, 0x03), which libcrypto would accept, are refused: Web Push only has uncompressed ones.
    public init?(uncompressed bytes: [UInt8]) {
        guard bytes.count == P256Curve.uncompressedPointLength, bytes[0] == 0x04,
              let point = EC_POINT_new(P256Curve.group)
        else { return nil }
        guard EC_POINT_oct2point(P256Curve.group, point, bytes, bytes.count, nil) == 1 else {
            EC_POINT_free(point)
            ERR_clear_error()
            return nil
        }
        pointer = point
    }

    deinit {
        EC_POINT_free(pointer)
    }
}

/// A P-256 key pair for ECDH, held as libcrypto's `EC_KEY` rather than an `EVP_PKEY`: OpenSSL 3's EVP path costs
/// about three times as much per Web Push message (see `herald_ec_key_generate` in CCrypto's shim.h).
///
/// `ECDH_compute_key` only reads the key, so one key serves concurrent callers.
public final class P256ECDHKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// 0x04 ‖ x ‖ y, kept: encoding the point costs a field inversion.
    public let publicPoint: [UInt8]

    private init(taking key: OpaquePointer) {
        self.key = key
        guard let point = herald_ec_key_public_point(key) else { fatalError("an EC_KEY without its public point") }
        publicPoint = P256Curve.uncompressed(point)
    }

    /// A fresh random key pair: a Web Push message's ephemeral key.
    public static func generate() throws(CryptoError) -> P256ECDHKey {
        ERR_clear_error()
        guard let key = herald_ec_key_generate(P256Curve.group) else {
            throw CryptoError.drain("P-256 key generation failed")
        }
        return P256ECDHKey(taking: key)
    }

    /// The same key as `evpKey`, a P-256 `EVP_PKEY` with its private part.
    convenience init(copying evpKey: OpaquePointer) {
        guard let key = herald_ec_key_of(evpKey) else { fatalError("EVP_PKEY_get1_EC_KEY failed on a P-256 key") }
        self.init(taking: key)
    }

    deinit {
        herald_ec_key_free(key)
    }

    /// The ECDH shared secret with `peer`: the x coordinate of the product, 32 bytes.
    public func sharedSecret(with peer: P256Point) throws(CryptoError) -> [UInt8] {
        ERR_clear_error()
        var secret = [UInt8](repeating: 0, count: 32)
        guard herald_ecdh_p256(&secret, peer.pointer, key) == 1 else { throw CryptoError.drain("P-256 ECDH failed") }
        return secret
    }
}
