#ifndef HERALD_CSSL_SHIM_H
#define HERALD_CSSL_SHIM_H

// OpenSSL's libssl, for the TLS under Herald's own HTTP/2 client (Send/HTTP2) and under the HTTPS server (HTTP/TLS,
// with the X509 calls that make its throw-away certificate). Only what they use; the macros among it (SSL_ctrl and
// SSL_CTX_ctrl calls) get typed wrappers, as Swift cannot call a macro.

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/// The server name sent in the ClientHello (SNI); never for an IP address (RFC 6066).
static inline int herald_ssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline int herald_ssl_ctx_set_min_tls12(SSL_CTX *context) {
    return (int)SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

/// Partial writes, a moving write buffer (the pending output is a Swift array that may be reallocated between
/// retries) and one read of the socket for as many records as it holds.
static inline void herald_ssl_ctx_set_client_modes(SSL_CTX *context) {
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_read_ahead(context, 1);
}

/// The server's modes: partial writes and a moving write buffer, as for the client.
static inline void herald_ssl_ctx_set_server_modes(SSL_CTX *context) {
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/// Adds an intermediate certificate to the chain the server sends; the context takes ownership of `certificate`.
static inline int herald_ssl_ctx_add0_chain_cert(SSL_CTX *context, X509 *certificate) {
    return (int)SSL_CTX_add0_chain_cert(context, certificate);
}

/// The bytes a memory BIO holds (BIO_get_mem_data is a macro).
static inline long herald_bio_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

#endif
