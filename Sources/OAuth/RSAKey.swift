import CCrypto

/// An RSA private key held by libcrypto: it signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256), the only algorithm
/// Google's OAuth2 token endpoint accepts for service-account assertions.
///
/// ```swift
/// let key = try RSAPrivateKey(pem: serviceAccount.privateKeyPEM)
/// let signature = try key.signSHA256(Array("header.claims".utf8))
/// key.publicKey.verifySHA256(signature, of: Array("header.claims".utf8))   // true
/// ```
///
/// The key material stays inside libcrypto; nothing here prints it. `EVP_PKEY` is safe to use from several threads
/// for signing and verifying (OpenSSL 3), so the type is `Sendable`.
///
/// Related documentation: [EVP_DigestSignInit(3)](https://www.openssl.org/docs/man3.0/man3/EVP_DigestSignInit.html).
public final class RSAPrivateKey: @unchecked Sendable, CustomStringConvertible {
    let pointer: OpaquePointer

    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, what Google issues) or PKCS#1 (`BEGIN RSA PRIVATE KEY`).
    /// Throws for anything else, an encrypted key, or a key that is not RSA.
    public init(pem: String) throws(CryptoError) {
        pointer = try PEMKey.readPrivate(pem, refusal: "not an RSA key: RS256 needs one") {
            EVP_PKEY_get_base_id($0) == EVP_PKEY_RSA
        }
    }

    /// A new random key, for tests and the sandbox's throw-away service account.
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAPrivateKey {
        ERR_clear_error()
        guard let key = herald_rsa_generate(UInt32(bits)) else { throw CryptoError.drain("RSA key generation failed") }
        return RSAPrivateKey(taking: key)
    }

    private init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Size of the modulus in bits.
    public var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// The PKCS#1 v1.5 SHA-256 signature of `message`.
    public func signSHA256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try PEMKey.signSHA256(message, with: pointer)
    }

    /// The public half, for verifying what this key signed.
    public var publicKey: RSAPublicKey {
        RSAPublicKey(taking: PEMKey.publicCopy(of: pointer))
    }

    /// The key as PKCS#8 PEM (`BEGIN PRIVATE KEY`), as in a service-account file. Tests and the sandbox write it;
    /// nothing logs it.
    public func pkcs8PEM() -> String {
        withMemoryBIO { PEM_write_bio_PrivateKey($0, pointer, nil, nil, 0, nil, nil) }
    }

    /// Never the key: a description that cannot leak it into a log line or an error body.
    public var description: String { "RSAPrivateKey(\(bits) bits)" }
}

/// An RSA public key: it checks RS256 signatures.
public final class RSAPublicKey: @unchecked Sendable, CustomStringConvertible {
    let pointer: OpaquePointer

    fileprivate init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Reads a PEM `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo).
    public init(pem: String) throws(CryptoError) {
        pointer = try PEMKey.readPublic(pem, refusal: "not an RSA public key") {
            EVP_PKEY_get_base_id($0) == EVP_PKEY_RSA
        }
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Whether `signature` is this key's PKCS#1 v1.5 SHA-256 signature of `message`.
    public func verifySHA256(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        PEMKey.verifySHA256(signature, of: message, with: pointer)
    }

    /// `BEGIN PUBLIC KEY` PEM.
    public func pem() -> String {
        withMemoryBIO { PEM_write_bio_PUBKEY($0, pointer) }
    }

    public var description: String { "RSAPublicKey(\(EVP_PKEY_get_bits(pointer)) bits)" }
}
