#ifndef HERALD_CCRYPTO_SHIM_H
#define HERALD_CCRYPTO_SHIM_H

// OpenSSL's libcrypto: the RS256 signatures of FCM HTTP v1's OAuth2 service-account flow, the P-256 (ES256)
// signatures of APNs' provider tokens and Web Push's VAPID, and Web Push's message encryption (RFC 8291: ECDH on
// P-256, HMAC-SHA-256, AES-128-GCM).

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

// EVP_RSA_gen is a macro over the variadic EVP_PKEY_Q_keygen, which Swift cannot call.
static inline EVP_PKEY *herald_rsa_generate(unsigned int bits) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
}

// EVP_EC_gen is a macro over the same variadic function.
static inline EVP_PKEY *herald_p256_generate(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

// A P-256 EVP_PKEY from its private scalar and its public point (0x04 || x || y), or NULL. In C because
// OSSL_PARAM_BLD keeps the key and value pointers it is pushed until OSSL_PARAM_BLD_to_param, which the temporary C
// strings Swift passes do not outlive.
static inline EVP_PKEY *herald_p256_from_scalar(const BIGNUM *scalar, const unsigned char *point, size_t length) {
    EVP_PKEY *key = NULL;
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM *parameters = NULL;
    EVP_PKEY_CTX *context = NULL;
    if (builder == NULL
        || OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, SN_X9_62_prime256v1, 0) != 1
        || OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_PRIV_KEY, scalar) != 1
        || OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, point, length) != 1
        || (parameters = OSSL_PARAM_BLD_to_param(builder)) == NULL
        || (context = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) == NULL
        || EVP_PKEY_fromdata_init(context) != 1
        || EVP_PKEY_fromdata(context, &key, EVP_PKEY_KEYPAIR, parameters) != 1) {
        key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    OSSL_PARAM_free(parameters);
    OSSL_PARAM_BLD_free(builder);
    return key;
}

// Web Push's ECDH through libcrypto's EC_KEY interface, deprecated in OpenSSL 3 in favour of EVP_PKEY but present and
// maintained. Measured per message on the project's machine: EVP_PKEY_Q_keygen 24 us, a peer EVP_PKEY from the
// subscription's point 17 us and EVP_PKEY_derive 93 us (its public-key check multiplies by the group order), against
// 9 us for EC_KEY_generate_key on a shared EC_GROUP and 44 us for ECDH_compute_key, which is the curve's floor
// (`openssl speed ecdhp256`). The deprecation is silenced here, in one place; Sources/OAuth/P256ECDH.swift is the
// only user.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// A fresh random key pair on `group` (which the key copies), or NULL.
static inline EC_KEY *herald_ec_key_generate(const EC_GROUP *group) {
    EC_KEY *key = EC_KEY_new();
    if (key == NULL) return NULL;
    if (EC_KEY_set_group(key, group) != 1 || EC_KEY_generate_key(key) != 1) {
        EC_KEY_free(key);
        return NULL;
    }
    return key;
}

// The EC_KEY behind an EC EVP_PKEY (a reference of its own), or NULL.
static inline EC_KEY *herald_ec_key_of(EVP_PKEY *key) {
    return EVP_PKEY_get1_EC_KEY(key);
}

static inline void herald_ec_key_free(EC_KEY *key) {
    EC_KEY_free(key);
}

static inline const EC_POINT *herald_ec_key_public_point(const EC_KEY *key) {
    return EC_KEY_get0_public_key(key);
}

// The x coordinate of `key`'s private scalar times `peer`, 32 bytes into `secret`: 1 on success, 0 on failure.
static inline int herald_ecdh_p256(unsigned char *secret, const EC_POINT *peer, const EC_KEY *key) {
    return ECDH_compute_key(secret, 32, peer, key, NULL) == 32;
}

#pragma GCC diagnostic pop

#endif
