import CCrypto

/// The libcrypto plumbing both key types share (RSA for FCM v1, P-256 for APNs and VAPID): reading PEM into an
/// `EVP_PKEY`, copying out the public half, signing and verifying SHA-256, writing PEM back.
enum PEMKey {
    /// A PEM private key (PKCS#8, or the algorithm's own form) that `accept` takes; throws `refusal` for a key of
    /// another kind. An encrypted key fails: an empty passphrase callback makes it fail instead of prompting on the
    /// terminal.
    static func readPrivate(
        _ pem: String, refusal: String, accept: (OpaquePointer) -> Bool
    ) throws(CryptoError) -> OpaquePointer {
        try read(pem, what: "private", refusal: refusal, accept: accept) {
            PEM_read_bio_PrivateKey($0, nil, { _, _, _, _ in 0 }, nil)
        }
    }

    /// A PEM `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo) that `accept` takes; throws `refusal` for another kind.
    static func readPublic(
        _ pem: String, refusal: String, accept: (OpaquePointer) -> Bool
    ) throws(CryptoError) -> OpaquePointer {
        try read(pem, what: "public", refusal: refusal, accept: accept) { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
    }

    private static func read(
        _ pem: String, what: String, refusal: String, accept: (OpaquePointer) -> Bool,
        _ reader: (OpaquePointer) -> OpaquePointer?
    ) throws(CryptoError) -> OpaquePointer {
        ERR_clear_error()
        let key: OpaquePointer? = pem.utf8CString.withUnsafeBufferPointer { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count - 1)) else { return nil }
            defer { BIO_free(bio) }
            return reader(bio)
        }
        guard let key else { throw CryptoError.drain("not a PEM \(what) key") }
        guard accept(key) else {
            EVP_PKEY_free(key)
            throw CryptoError(refusal, detail: "")
        }
        return key
    }

    /// `key`'s signature of SHA-256(`message`) as libcrypto makes it (PKCS#1 v1.5 for RSA, DER for ECDSA).
    static func signSHA256(_ message: [UInt8], with key: OpaquePointer) throws(CryptoError) -> [UInt8] {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.drain("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw CryptoError.drain("EVP_DigestSignInit failed")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw CryptoError.drain("EVP_DigestSign failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw CryptoError.drain("EVP_DigestSign failed")
        }
        return Array(signature.prefix(length))
    }

    /// Whether `signature` (in libcrypto's form) is `key`'s signature of SHA-256(`message`).
    static func verifySHA256(_ signature: [UInt8], of message: [UInt8], with key: OpaquePointer) -> Bool {
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }

    /// The public half of `key` as a separate `EVP_PKEY` without the private parts (through DER
    /// SubjectPublicKeyInfo).
    static func publicCopy(of key: OpaquePointer) -> OpaquePointer {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(key, &der)
        precondition(length > 0 && der != nil, "i2d_PUBKEY failed on a valid key")
        defer { CRYPTO_free(der, nil, 0) }
        var cursor = UnsafePointer<UInt8>(der)
        let copy = d2i_PUBKEY(nil, &cursor, Int(length))
        precondition(copy != nil, "d2i_PUBKEY failed on its own output")
        return copy!
    }
}

/// Runs `write` into a memory BIO and returns what it wrote as text.
func withMemoryBIO(_ write: (OpaquePointer) -> Int32) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { fatalError("BIO_new failed (out of memory)") }
    defer { BIO_free(bio) }
    precondition(write(bio) == 1, "PEM encoding into memory failed")
    let pending = Int(BIO_ctrl_pending(bio))
    var bytes = [UInt8](repeating: 0, count: pending)
    let read = BIO_read(bio, &bytes, Int32(pending))
    return String(decoding: bytes.prefix(Int(max(0, read))), as: UTF8.self)
}
