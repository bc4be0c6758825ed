import CCrypto

/// AES-GCM (AEAD_AES_128_GCM and AEAD_AES_256_GCM, RFC 5116) with a 12-byte nonce and a 16-byte tag: AES-128 for Web
/// Push's one record, AES-256 for the secrets Herald stores (`SecretsKey`). The key's length chooses.
///
/// The ciphers are fetched from the provider once; a context per call costs well under a microsecond.
public enum AESGCM {
    public static let tagLength = 16
    public static let nonceLength = 12

    nonisolated(unsafe) private static let aes128: OpaquePointer = fetch("AES-128-GCM")
    nonisolated(unsafe) private static let aes256: OpaquePointer = fetch("AES-256-GCM")

    private static func fetch(_ name: String) -> OpaquePointer {
        guard let cipher = EVP_CIPHER_fetch(nil, name, nil) else { fatalError("libcrypto has no \(name)") }
        return cipher
    }

    private static func cipher(key: [UInt8], nonce: [UInt8]) -> OpaquePointer {
        precondition(
            (key.count == 16 || key.count == 32) && nonce.count == nonceLength,
            "AES-GCM takes a 16- or 32-byte key and a 12-byte nonce")
        return key.count == 16 ? aes128 : aes256
    }

    /// Appends the encryption of `plaintext` ‖ `trailer` to `output`, then the tag; `associatedData` is
    /// authenticated, not encrypted.
    public static func seal(
        _ plaintext: [UInt8], trailer: [UInt8] = [], associatedData: [UInt8] = [], key: [UInt8], nonce: [UInt8],
        appendingTo output: inout [UInt8]
    ) throws(CryptoError) {
        let cipher = cipher(key: key, nonce: nonce)
        ERR_clear_error()
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError.drain("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        let start = output.count
        output += repeatElement(0, count: plaintext.count + trailer.count + tagLength)
        let sealed = output.withUnsafeMutableBufferPointer { buffer -> Bool in
            var cursor = buffer.baseAddress! + start
            var written: Int32 = 0
            guard EVP_EncryptInit_ex2(context, cipher, key, nonce, nil) == 1 else { return false }
            if !associatedData.isEmpty {
                guard EVP_EncryptUpdate(context, nil, &written, associatedData, Int32(associatedData.count)) == 1
                else { return false }
            }
            for part in [plaintext, trailer] where !part.isEmpty {
                guard EVP_EncryptUpdate(context, cursor, &written, part, Int32(part.count)) == 1 else { return false }
                cursor += Int(written)
            }
            guard EVP_EncryptFinal_ex(context, cursor, &written) == 1 else { return false }
            cursor += Int(written)
            return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), cursor) == 1
        }
        guard sealed else { throw CryptoError.drain("AES-GCM encryption failed") }
    }

    /// The plaintext of `sealed` (ciphertext ‖ tag); nil when the tag does not match (wrong key, other associated
    /// data, or the bytes were changed).
    public static func open(
        _ sealed: ArraySlice<UInt8>, associatedData: [UInt8] = [], key: [UInt8], nonce: [UInt8]
    ) throws(CryptoError) -> [UInt8]? {
        let cipher = cipher(key: key, nonce: nonce)
        guard sealed.count >= tagLength else { return nil }
        ERR_clear_error()
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError.drain("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        let ciphertextLength = sealed.count - tagLength
        var plaintext = [UInt8](repeating: 0, count: ciphertextLength)
        var tag = Array(sealed.suffix(tagLength))
        var associated: Int32 = 0
        guard EVP_DecryptInit_ex2(context, cipher, key, nonce, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1,
              associatedData.isEmpty
                || EVP_DecryptUpdate(context, nil, &associated, associatedData, Int32(associatedData.count)) == 1
        else { throw CryptoError.drain("AES-GCM setup failed") }
        var written: Int32 = 0
        let updated = sealed.withUnsafeBufferPointer { input in
            plaintext.withUnsafeMutableBufferPointer { output in
                ciphertextLength == 0
                    || EVP_DecryptUpdate(context, output.baseAddress, &written, input.baseAddress,
                                         Int32(ciphertextLength)) == 1
            }
        }
        guard updated else { throw CryptoError.drain("AES-GCM decryption failed") }
        var finalLength: Int32 = 0
        let authentic = plaintext.withUnsafeMutableBufferPointer { output in
            EVP_DecryptFinal_ex(context, output.baseAddress.map { $0 + Int(written) }, &finalLength) == 1
        }
        ERR_clear_error()
        return authentic ? plaintext : nil
    }
}
