import CCrypto

/// Bytes from libcrypto's CSPRNG (`RAND_bytes`: a DRBG per thread, seeded from the operating system).
public enum SecureRandom {
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        ERR_clear_error()
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw CryptoError.drain("RAND_bytes failed") }
        return bytes
    }
}
