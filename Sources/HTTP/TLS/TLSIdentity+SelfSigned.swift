import CSSL
import TLS
import Posix

extension TLSIdentity {
    /// A throw-away identity for a server on this machine: a new P-256 key and a self-signed certificate for `names`
    /// (IP addresses become `IP:` subject alternative names, anything else `DNS:`), valid from an hour ago for `days`.
    /// Made with libcrypto's X509 calls; no `openssl` command is run.
    ///
    /// The certificate is a leaf (`CA:FALSE`, extended key usage `serverAuth`): a client trusts it by being given it
    /// as its CA file (Herald's `HTTP2ClientPool(caFile:)`, `curl --cacert`, node's `ca`), and then checks the name
    /// it connected to against the alternative names as for any server.
    public static func selfSigned(names: [String], days: Int = 365) throws(HTTPServerError) -> TLSIdentity {
        guard !names.isEmpty else { throw HTTPServerError("a self-signed certificate needs at least one name") }
        guard let key = generateP256() else {
            throw HTTPServerError(OpenSSLError.reason("TLS: generating a P-256 key"))
        }
        defer { EVP_PKEY_free(key) }
        guard let certificate = X509_new() else { throw HTTPServerError(OpenSSLError.reason("TLS: X509_new")) }
        defer { X509_free(certificate) }

        let alternativeNames = names.map { SocketAddress.isIPAddress($0) ? "IP:" + $0 : "DNS:" + $0 }
        let serial = UInt64.random(in: 1...UInt64(Int64.max))
        var built = X509_set_version(certificate, Int(X509_VERSION_3)) == 1
            && ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial) == 1
            && X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil
            && X509_gmtime_adj(X509_getm_notAfter(certificate), max(1, days) * 86_400) != nil
            && X509_set_pubkey(certificate, key) == 1
        if built, let name = X509_get_subject_name(certificate) {
            built = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "Herald simulator", -1, -1, 0) == 1
                && X509_set_issuer_name(certificate, name) == 1
        }
        guard built else { throw HTTPServerError(OpenSSLError.reason("TLS: building the certificate")) }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, certificate, nil, nil, 0)
        let extensions = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_subject_alt_name, alternativeNames.joined(separator: ",")),
        ]
        for (nid, value) in extensions {
            guard let made = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw HTTPServerError(OpenSSLError.reason("TLS: certificate extension \(value)"))
            }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else {
                throw HTTPServerError(OpenSSLError.reason("TLS: adding certificate extension \(value)"))
            }
        }
        guard X509_sign(certificate, key, EVP_sha256()) > 0 else {
            throw HTTPServerError(OpenSSLError.reason("TLS: signing the certificate"))
        }

        let certificatePEM = pem { PEM_write_bio_X509($0, certificate) }
        let keyPEM = pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        guard let certificatePEM, let keyPEM else { throw HTTPServerError(OpenSSLError.reason("TLS: writing PEM")) }
        return TLSIdentity(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
    }

    /// `EVP_EC_gen("P-256")`, which is a macro over a variadic function, through the calls it makes.
    private static func generateP256() -> OpaquePointer? {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
              EVP_PKEY_generate(context, &key) == 1
        else { return nil }
        return key
    }

    /// What `write` puts into a memory BIO, as text; nil when it fails.
    private static func pem(_ write: (OpaquePointer) -> Int32) -> String? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return nil }
        var data: UnsafeMutablePointer<CChar>?
        let count = herald_bio_mem_data(bio, &data)
        guard count > 0, let data else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
    }
}
