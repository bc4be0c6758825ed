import CSSL
import TLS

/// One `SSL_CTX` per pool: TLS 1.2 or newer, the peer's certificate checked against `caFile` (else OpenSSL's
/// default locations, which honour `$SSL_CERT_FILE` and `$SSL_CERT_DIR`), ALPN offering `h2` (and `http/1.1`), and
/// `clientIdentity`'s certificate for servers that ask for one.
final class TLSContext {
    let pointer: OpaquePointer

    /// Throws OpenSSL's reason when the context cannot be made (an unreadable `caFile`, in practice).
    init(caFile: String?, clientIdentity: TLSClientIdentity? = nil) throws(TLSError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSError.last("SSL_CTX_new") }
        pointer = context
        guard herald_ssl_ctx_set_min_tls12(context) == 1 else { throw TLSError.last("TLS 1.2 minimum") }
        herald_ssl_ctx_set_client_modes(context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        let loaded = if let caFile {
            SSL_CTX_load_verify_locations(context, caFile, nil)
        } else {
            SSL_CTX_set_default_verify_paths(context)
        }
        guard loaded == 1 else { throw TLSError.last("CA certificates") }
        try clientIdentity?.use(in: context)
        // HTTP/1.1 too, so that a server without HTTP/2 says so by choosing it (some end the handshake when
        // nothing offered suits them) and its requests can go over libcurl instead.
        let protocols: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)
        // 0 is success here, unlike the rest of OpenSSL.
        guard SSL_CTX_set_alpn_protos(context, protocols, UInt32(protocols.count)) == 0 else {
            throw TLSError.last("ALPN")
        }
    }

    deinit {
        SSL_CTX_free(pointer)
    }
}

/// A TLS failure with OpenSSL's reason, for the failed requests' `reason`.
struct TLSError: Error, CustomStringConvertible {
    var description: String

    /// `step` and the oldest error on this thread's OpenSSL error queue (which it empties).
    static func last(_ step: String) -> TLSError {
        TLSError(description: OpenSSLError.reason("TLS: " + step))
    }
}
