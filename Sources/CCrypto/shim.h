#ifndef HERALD_CCRYPTO_SHIM_H
#define HERALD_CCRYPTO_SHIM_H

// OpenSSL's libcrypto: the RS256 signatures of FCM HTTP v1's OAuth2 service-account flow, and the P-256 (ES256)
// signatures of APNs' provider tokens and Web Push's VAPID.

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

// EVP_RSA_gen is a macro over the variadic EVP_PKEY_Q_keygen, which Swift cannot call.
static inline EVP_PKEY *herald_rsa_generate(unsigned int bits) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
}

// EVP_EC_gen is a macro over the same variadic function.
static inline EVP_PKEY *herald_p256_generate(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

#endif
