import CSSL
import Glibc
import TLS

/// A TLS client certificate, its private key and its chain: what a client proves itself with to a server that asks
/// (mutual TLS), from a PKCS#12 file or from PEM. `HTTP2ClientPool(clientIdentity:)` presents it on every connection.
///
/// ```swift
/// let identity = try TLSClientIdentity(pkcs12: Array(p12Data), password: "secret")
/// identity.notAfterMillis   // when the certificate expires (Unix ms)
/// ```
///
/// Checked on loading: the key belongs to the certificate. Read-only afterwards, so contexts on any thread may use
/// it. Neither the key nor a password ever appears in an error or a description.
public final class TLSClientIdentity: @unchecked Sendable, CustomStringConvertible {
    /// Why a certificate or key cannot be used; OpenSSL's reason where it gave one.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private let certificate: OpaquePointer
    private let key: OpaquePointer
    /// The certificates sent after the client's own (its issuers but the root), each with a reference of ours.
    private let chain: [OpaquePointer]
    /// A certificate that expires sooner than this is warned about at start and in `herald status`: time to renew it.
    public static let expiryWarningMillis: Int64 = 30 * 86_400_000

    /// The certificate's notAfter, in Unix milliseconds.
    public let notAfterMillis: Int64
    /// SHA-256 of the certificate (DER), in lower-case hex: it names the certificate without saying anything secret.
    public let sha256Fingerprint: String
    /// The subject's common name (CN) and user id (UID, OID 0.9.2342.19200300.100.1.1), when it has them.
    public let subjectCommonName: String?
    public let subjectUserID: String?

    /// The identity in a PKCS#12 file (`.p12`, `.pfx`): its certificate, key and any further certificates. `password`
    /// nil: the file has none (the empty password is tried too). Files from older exports that encrypt with RC2 or
    /// DES load with OpenSSL's legacy provider, which is loaded for them.
    public convenience init(pkcs12 der: [UInt8], password: String?) throws(Invalid) {
        var parsed = Self.parsePKCS12(der, password: password)
        var reasons = OpenSSLError.drain()
        if parsed == nil, reasons.contains(where: { $0.contains("unsupported") }), herald_load_legacy_provider() == 1 {
            parsed = Self.parsePKCS12(der, password: password)
            reasons = OpenSSLError.drain()
        }
        guard let (certificate, key, chain) = parsed else {
            let reason = reasons.contains { $0.contains("mac verify failure") }
                ? "the password is wrong (or the file is damaged)"
                : "not a PKCS#12 file holding a certificate and its key" + (reasons.first.map { " (\($0))" } ?? "")
            throw Invalid(description: reason)
        }
        try self.init(certificate: certificate, key: key, chain: chain)
    }

    /// The identity in PEM text: the certificate first (then any chain certificates), and an unencrypted private key
    /// (PKCS#8, SEC 1 or PKCS#1), which may be in the same text.
    public convenience init(certificatePEM: String, keyPEM: String) throws(Invalid) {
        var certificates = try Self.withMemoryBIO(certificatePEM) { bio in
            var read: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { read.append(certificate) }
            return read
        }
        // The loop ends on "no start line" past the last certificate: not an error.
        OpenSSLError.clear()
        guard !certificates.isEmpty else { throw Invalid(description: "no PEM certificate (BEGIN CERTIFICATE)") }
        // No passphrase callback: an encrypted key fails here rather than prompting on a terminal.
        let key = try Self.withMemoryBIO(keyPEM) { bio in PEM_read_bio_PrivateKey(bio, nil, Self.noPassphrase, nil) }
        guard let key else {
            certificates.forEach { X509_free($0) }
            throw Invalid(description: "no unencrypted PEM private key (BEGIN PRIVATE KEY)")
        }
        let certificate = certificates.removeFirst()
        try self.init(certificate: certificate, key: key, chain: certificates)
    }

    /// Takes the references given, and frees them when it throws.
    private init(certificate: OpaquePointer, key: OpaquePointer, chain: [OpaquePointer]) throws(Invalid) {
        let notAfter: Int64
        let fingerprint: String
        do {
            (notAfter, fingerprint) = try Self.check(certificate, key)
        } catch {
            X509_free(certificate)
            EVP_PKEY_free(key)
            chain.forEach { X509_free($0) }
            throw error
        }
        (self.certificate, self.key, self.chain) = (certificate, key, chain)
        (notAfterMillis, sha256Fingerprint) = (notAfter, fingerprint)
        subjectCommonName = Self.subjectEntry(certificate, NID_commonName)
        subjectUserID = Self.subjectEntry(certificate, NID_userId)
    }

    /// That the key is the certificate's; then the certificate's notAfter and fingerprint.
    private static func check(
        _ certificate: OpaquePointer, _ key: OpaquePointer
    ) throws(Invalid) -> (notAfter: Int64, fingerprint: String) {
        guard X509_check_private_key(certificate, key) == 1 else {
            OpenSSLError.clear()
            throw Invalid(description: "the private key does not belong to the certificate")
        }
        var time = tm()
        guard let notAfter = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(notAfter, &time) == 1 else {
            throw Invalid(description: "the certificate has no readable expiry date")
        }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, EVP_sha256(), &digest, &length) == 1 else {
            throw Invalid(description: OpenSSLError.reason("the certificate's SHA-256"))
        }
        let fingerprint = digest.prefix(Int(length)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return (Int64(timegm(&time)) * 1000, fingerprint)
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
        chain.forEach { X509_free($0) }
    }

    public var description: String {
        "TLSClientIdentity(\(subjectCommonName ?? "no CN"), sha256 \(sha256Fingerprint), key: hidden)"
    }

    /// Makes `context` present this identity to servers that ask for a client certificate.
    func use(in context: OpaquePointer) throws(TLSError) {
        guard SSL_CTX_use_certificate(context, certificate) == 1, SSL_CTX_use_PrivateKey(context, key) == 1 else {
            throw TLSError.last("client certificate")
        }
        for certificate in chain where herald_ssl_ctx_add1_chain_cert(context, certificate) != 1 {
            throw TLSError.last("client certificate chain")
        }
    }

    // MARK: - OpenSSL

    private static func parsePKCS12(
        _ der: [UInt8], password: String?
    ) -> (OpaquePointer, OpaquePointer, [OpaquePointer])? {
        var certificate: OpaquePointer?
        var key: OpaquePointer?
        var stack: OpaquePointer?
        let parsed = herald_pkcs12_parse(der, der.count, password, &certificate, &key, &stack)
        defer { herald_x509_stack_free(stack) }
        guard parsed == 1, let certificate, let key else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            return nil
        }
        let chain = (0..<herald_x509_stack_count(stack)).compactMap { index -> OpaquePointer? in
            guard let member = herald_x509_stack_value(stack, index), X509_up_ref(member) == 1 else { return nil }
            return member
        }
        return (certificate, key, chain)
    }

    private static func subjectEntry(_ certificate: OpaquePointer, _ nid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let length = herald_x509_subject_entry(certificate, nid, &buffer, Int32(buffer.count))
        guard length >= 0 else { return nil }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Calls `body` with a read-only memory BIO over `pem`'s bytes, alive for the call only.
    private static func withMemoryBIO<Value>(
        _ pem: String, _ body: (OpaquePointer) -> Value
    ) throws(Invalid) -> Value {
        var pem = pem
        let value = pem.withUTF8 { bytes -> Value? in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
        guard let value else { throw Invalid(description: OpenSSLError.reason("BIO_new_mem_buf")) }
        return value
    }

    private static let noPassphrase: @convention(c) (
        UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, _, _, _ in 0 }
}
