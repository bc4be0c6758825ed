#ifndef HERALD_CSSL_SHIM_H
#define HERALD_CSSL_SHIM_H

// OpenSSL's libssl, for the TLS under Herald's own HTTP/2 client (Send/HTTP2) and under the HTTPS server (HTTP/TLS,
// with the X509 calls that make its throw-away certificate), and the client certificates some of Herald's client's
// connections present (PEM or PKCS#12: Send/HTTP2/TLSClientIdentity.swift). Only what they use; the macros among it
// (SSL_ctrl and SSL_CTX_ctrl calls) get typed wrappers, as Swift cannot call a macro.

#include <string.h>

#include <openssl/err.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
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

/// Adds a certificate to the chain a client sends after its own (a client certificate's intermediates); the context
/// takes a reference of its own.
static inline int herald_ssl_ctx_add1_chain_cert(SSL_CTX *context, X509 *certificate) {
    return (int)SSL_CTX_add1_chain_cert(context, certificate);
}

/// A PKCS#12 file's certificate, private key and further certificates (`*chain`: NULL or a stack the caller frees
/// with `herald_x509_stack_free`); 1 on success. `password` NULL: none (OpenSSL then also tries the empty one).
static inline int herald_pkcs12_parse(const unsigned char *der, long length, const char *password, X509 **certificate,
                                      EVP_PKEY **key, STACK_OF(X509) **chain) {
    PKCS12 *p12 = d2i_PKCS12(NULL, &der, length);
    if (p12 == NULL) return 0;
    int parsed = PKCS12_parse(p12, password, key, certificate, chain);
    PKCS12_free(p12);
    return parsed;
}

static inline int herald_x509_stack_count(const STACK_OF(X509) *stack) {
    return stack == NULL ? 0 : sk_X509_num(stack);
}

static inline X509 *herald_x509_stack_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

static inline void herald_x509_stack_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}

/// OpenSSL 3's legacy provider (RC2, 40-bit RC2 and DES, which older PKCS#12 exports use), beside the default one;
/// 1 when both are loaded. They stay loaded for the process.
static inline int herald_load_legacy_provider(void) {
    return OSSL_PROVIDER_load(NULL, "legacy") != NULL && OSSL_PROVIDER_load(NULL, "default") != NULL;
}

/// The UTF-8 text of the first `nid` entry of the certificate's subject (NID_commonName, NID_userId) into `out`,
/// NUL-terminated and cut at `capacity - 1` bytes: its length, or -1 when the subject has none.
static inline int herald_x509_subject_entry(X509 *certificate, int nid, char *out, int capacity) {
    X509_NAME *name = X509_get_subject_name(certificate);
    int index = name == NULL ? -1 : X509_NAME_get_index_by_NID(name, nid, -1);
    if (index < 0 || capacity < 1) return -1;
    unsigned char *text = NULL;
    int length = ASN1_STRING_to_UTF8(&text, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index)));
    if (length < 0) return -1;
    if (length > capacity - 1) length = capacity - 1;
    memcpy(out, text, (size_t)length);
    out[length] = 0;
    OPENSSL_free(text);
    return length;
}

/// The bytes a memory BIO holds (BIO_get_mem_data is a macro).
static inline long herald_bio_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

#endif
