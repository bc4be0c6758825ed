import CCrypto

/// SHA-256 over libcrypto, the algorithm fetched from the default provider once (a fetch per call costs more than
/// the hash of a short input; see `HMACSHA256`).
public enum SHA256 {
    public static let length = 32

    nonisolated(unsafe) static let algorithm: OpaquePointer = {
        guard let digest = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("libcrypto has no SHA-256") }
        return digest
    }()

    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        // EVP_Digest fails only when libcrypto cannot allocate a context.
        guard EVP_Digest(bytes, bytes.count, &output, nil, algorithm, nil) == 1 else {
            fatalError("SHA-256 failed: libcrypto is out of memory")
        }
        return output
    }
}
