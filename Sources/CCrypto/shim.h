#ifndef HERALD_CCRYPTO_SHIM_H
#define HERALD_CCRYPTO_SHIM_H

// OpenSSL's libcrypto, for the RS256 signatures of FCM HTTP v1's OAuth2 service-account flow.

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

// EVP_RSA_gen is a macro over the variadic EVP_PKEY_Q_keygen, which Swift cannot call.
static inline EVP_PKEY *herald_rsa_generate(unsigned int bits) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
}

#endif
