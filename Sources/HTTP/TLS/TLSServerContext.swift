import CSSL
import TLS

/// One `SSL_CTX` per HTTPS server: TLS 1.2 or newer, the identity's certificate chain and key (checked to belong
/// together), and ALPN choosing `h2` when the client offers it, else `http/1.1`. A client that offers neither, or
/// sends no ALPN at all (curl `--http1.1` without it, node's `https`), gets no ALPN answer and speaks HTTP/1.1.
final class TLSServerContext: @unchecked Sendable {
    /// Read-only once made: OpenSSL lets threads share a context for `SSL_new`.
    let pointer: OpaquePointer

    init(identity: TLSIdentity) throws(HTTPServerError) {
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw HTTPServerError(OpenSSLError.reason("TLS: SSL_CTX_new"))
        }
        pointer = context
        guard herald_ssl_ctx_set_min_tls12(context) == 1 else {
            throw HTTPServerError(OpenSSLError.reason("TLS: TLS 1.2 minimum"))
        }
        herald_ssl_ctx_set_server_modes(context)
        try Self.useCertificates(identity.certificatePEM, in: context)
        try Self.usePrivateKey(identity.privateKeyPEM, in: context)
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw HTTPServerError(OpenSSLError.reason("TLS: the private key does not belong to the certificate"))
        }
        SSL_CTX_set_alpn_select_cb(context, Self.selectProtocol, nil)
    }

    deinit {
        SSL_CTX_free(pointer)
    }

    /// The first certificate of `pem` is the server's, the rest its chain.
    private static func useCertificates(_ pem: String, in context: OpaquePointer) throws(HTTPServerError) {
        try withMemoryBIO(pem, failure: "TLS: reading the certificate") { bio throws(HTTPServerError) in
            guard let leaf = PEM_read_bio_X509(bio, nil, nil, nil) else {
                throw HTTPServerError(OpenSSLError.reason("TLS: the certificate file holds no PEM certificate"))
            }
            defer { X509_free(leaf) }
            guard SSL_CTX_use_certificate(context, leaf) == 1 else {
                throw HTTPServerError(OpenSSLError.reason("TLS: using the certificate"))
            }
            while let intermediate = PEM_read_bio_X509(bio, nil, nil, nil) {
                guard herald_ssl_ctx_add0_chain_cert(context, intermediate) == 1 else {
                    X509_free(intermediate)
                    throw HTTPServerError(OpenSSLError.reason("TLS: adding a chain certificate"))
                }
            }
            // The loop ends on "no start line" past the last certificate: not an error.
            ERR_clear_error()
        }
    }

    private static func usePrivateKey(_ pem: String, in context: OpaquePointer) throws(HTTPServerError) {
        // No passphrase callback: an encrypted key fails here rather than prompting on a terminal.
        let key = try withMemoryBIO(pem, failure: "TLS: reading the key") { bio in
            PEM_read_bio_PrivateKey(bio, nil, Self.noPassphrase, nil)
        }
        guard let key else {
            throw HTTPServerError(OpenSSLError.reason("TLS: the key file holds no unencrypted PEM private key"))
        }
        defer { EVP_PKEY_free(key) }
        // OpenSSL checks here already that the key is the certificate's ("key values mismatch").
        guard SSL_CTX_use_PrivateKey(context, key) == 1 else {
            throw HTTPServerError(OpenSSLError.reason(
                "TLS: the private key does not belong to the certificate, or cannot be used with it"))
        }
    }

    /// Calls `body` with a read-only memory BIO over `pem`'s bytes, which stay alive (and the BIO with them) only for
    /// the call: the BIO does not copy what it reads from.
    private static func withMemoryBIO<Value>(
        _ pem: String, failure: String, _ body: (OpaquePointer) throws(HTTPServerError) -> Value
    ) throws(HTTPServerError) -> Value {
        var pem = pem
        return try pem.withUTF8 { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else {
                return Result<Value, HTTPServerError>.failure(HTTPServerError(OpenSSLError.reason(failure)))
            }
            defer { BIO_free(bio) }
            return Result { () throws(HTTPServerError) in try body(bio) }
        }.get()
    }

    private static let noPassphrase: @convention(c) (
        UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, _, _, _ in 0 }

    /// `h2` if the client offers it, else `http/1.1` if it offers that, else no ALPN (HTTP/1.1 all the same).
    /// The answer points into the client's list, which OpenSSL keeps for the handshake.
    private static let selectProtocol: SSL_CTX_alpn_select_cb_func = { _, out, outLength, offered, offeredLength, _ in
        guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_NOACK }
        var fallback: (offset: Int, length: UInt8)?
        var offset = 0
        while offset < Int(offeredLength) {
            let length = Int(offered[offset])
            let start = offset + 1
            guard length > 0, start + length <= Int(offeredLength) else { break }
            let name = UnsafeBufferPointer(start: offered + start, count: length)
            if name.elementsEqual("h2".utf8) {
                out.pointee = offered + start
                outLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
            if fallback == nil, name.elementsEqual("http/1.1".utf8) { fallback = (start, UInt8(length)) }
            offset = start + length
        }
        guard let fallback else { return SSL_TLSEXT_ERR_NOACK }
        out.pointee = offered + fallback.offset
        outLength.pointee = fallback.length
        return SSL_TLSEXT_ERR_OK
    }
}
