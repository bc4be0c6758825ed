// The floor of a Web Push send's CPU (Benchmarks/webpush.sh): the asymmetric crypto RFC 8291 asks of every message,
// a fresh P-256 key pair and one ECDH with the subscription's key, made with the libcrypto calls Herald makes
// (Sources/CCrypto/shim.h: EC_KEY_generate_key, ECDH_compute_key). Prints two numbers, microseconds per operation:
// key generation + ECDH, and ECDH alone (what `openssl speed ecdhp256` measures).
//   cc -O2 -o webpush-floor Benchmarks/webpush-floor.c -lcrypto && ./webpush-floor [seconds]
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/ec.h>
#include <openssl/ecdh.h>
#include <openssl/obj_mac.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static EC_KEY *generate(void) {
    EC_KEY *key = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    if (key == NULL || EC_KEY_generate_key(key) != 1) {
        fprintf(stderr, "P-256 key generation failed\n");
        exit(1);
    }
    return key;
}

static void agree(const EC_POINT *peer, const EC_KEY *key) {
    unsigned char secret[32];
    if (ECDH_compute_key(secret, sizeof secret, peer, key, NULL) != 32) {
        fprintf(stderr, "ECDH failed\n");
        exit(1);
    }
}

// Operations per CPU second of `body` run for `seconds` of CPU time.
#define RATE(seconds, body)                                                                                           \
    ({                                                                                                                \
        double start = now(), elapsed;                                                                                \
        long count = 0;                                                                                               \
        do {                                                                                                          \
            for (int i = 0; i < 100; i++) { body; }                                                                   \
            count += 100;                                                                                             \
        } while ((elapsed = now() - start) < (seconds));                                                              \
        elapsed * 1e6 / count;                                                                                        \
    })

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2;
    EC_KEY *subscriber = generate();
    const EC_POINT *peer = EC_KEY_get0_public_key(subscriber);
    EC_KEY *fixed = generate();
    double send = RATE(seconds, {
        EC_KEY *ephemeral = generate();
        agree(peer, ephemeral);
        EC_KEY_free(ephemeral);
    });
    double ecdh = RATE(seconds, agree(peer, fixed));
    printf("%.1f %.1f\n", send, ecdh);
    EC_KEY_free(fixed);
    EC_KEY_free(subscriber);
    return 0;
}
