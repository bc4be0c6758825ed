#!/usr/bin/env bash
# APNs benchmark (SPEC §10, "APNs, 30 ms stand-in, default settings": >= 10,000 sends/s, <= 50 us CPU per send; and
# no duplicates): Herald with its default settings sending single-token messages of an APNs app (SPEC §15) over TLS +
# HTTP/2 to a stand-in for Apple (scripts/apns-h2-standin.js under node: POST /3/device/<token> answered 200 after a
# fixed delay playing the round trip to Apple, 100 concurrent streams per connection, every provider token verified
# with node's crypto against the key's public half), beside h2load (nghttp2) on the same stand-in with the same
# connections x streams and the same requests, in the same run. For each delay (HERALD_BENCH_DELAYS, 30 ms):
#   rate         deliveries that reached `delivered` per second: the slope of
#                herald_deliveries_total{app="ios",outcome="delivered"} between the end of the ramp-up and the 95 %
#                mark of a preloaded backlog (after at most HERALD_BENCH_DURATION seconds)
#   h2load       requests/s of `h2load -c C -m M` for HERALD_BENCH_DURATION seconds, C x M = Herald's requests in
#                flight (its default concurrency, 1000: 10 connections x 100 streams), each a POST /3/device/<token>
#                with the body and apns-* headers of a request of Herald's as the stand-in captured them, and an
#                authorization header with a provider token this script signs with the run's key (ES256, kid and iss
#                as Herald's, signature r || s, base64url), which the stand-in verifies as it verifies Herald's
#   connections  the most connections Herald held (herald_fcm_connections{app="ios"}, sampled), and the TLS
#                sessions the stand-in accepted over the drain, against ceil(in-flight / 100) + 1
#   cpu/send     Herald's process CPU time (user + system, /proc/PID/stat) over the rate window / sends in it
#   peak RSS     Herald's VmHWM
#   accounting   the stand-in's count of requests against Herald's herald_fcm_requests_total{app="ios"} (every
#                request on the wire is one Herald accounts for), the stand-in's count of apns-ids answered 200
#                twice (duplicates, must be 0), and of provider tokens it could not verify (must be 0)
# The backlog is generated with the sqlite3 shell in the shape `POST /v1/messages` stores a v1 message to an APNs
# app (format 'v1', token_field 'token', the payload the message's members without its target: notification, data
# and an apns block; priority 'normal' and the 4-week TTL a v1 message without options gets), one distinct
# 64-hex-digit device token per message, into a database made by `herald migrate` with app "ios" paused;
# `herald resume ios` starts the drain. Herald's only app is "ios" ("provider": "apns" in a --config file, endpoint
# the stand-in); the .p8 key (P-256, PKCS#8, openssl) and the stand-in's self-signed certificate (trusted through
# SSL_CERT_FILE, which Herald's HTTP client honours) are made for the run. Nothing leaves loopback.
#
# Usage, from the repository root (root on Debian/Ubuntu installs node, openssl and nghttp2-client if missing):
#   Benchmarks/apns.sh
# Environment (all optional):
#   HERALD_BENCH_RUNS=3              rounds; the table shows medians
#   HERALD_BENCH_DELAYS=30           stand-in answer delays (ms) to measure (the target is for 30)
#   HERALD_BENCH_BACKLOG=200000      single-token messages preloaded per measurement
#   HERALD_BENCH_DURATION=15         seconds of h2load, and at most of Herald's rate window
#   HERALD_BENCH_RAMP=2              seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.2            seconds between two looks at /metrics
#   HERALD_BENCH_H2LOAD_THREADS=1    h2load threads
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp where the databases go (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1        use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1              keep the work directory
# Exit status: non-zero on errors (a tool failing, Herald stopping, a delivery not ending `delivered`, requests
# unaccounted for or answered twice, a provider token the stand-in could not verify, h2load seeing errors), never
# because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings RUNS=3 DELAYS=30 BACKLOG=200000 DURATION=15 RAMP=2 POLL=0.2 H2LOAD_THREADS=1
CONCURRENCY=1000 # Herald's default for an APNs app; h2load gets the same requests in flight
STREAMS=100
KEY_ID=BENCHKEY01 # 10 characters, as Apple's Key IDs
TEAM_ID=BENCHTEAM1
TOPIC=com.example.bench
TARGET_RATE_30=10000
TARGET_CPU_US=50

standin_run
bench_tools node openssl h2load sqlite3 curl
build_herald
make_work apns

# --- the stand-in (Benchmarks/common.sh's start_standin, with the APNs script) and the app's key ----------
# The signing key as Apple hands it out (a .p8 file: a P-256 private key in PKCS#8 PEM), and its public half for the
# stand-in to verify every provider token with.
standin_certificate
KEY_FILE=$WORK/AuthKey_$KEY_ID.p8
p256_key "$KEY_FILE" "the APNs signing key"
openssl pkey -in "$KEY_FILE" -pubout -out "$WORK/auth-public.pem" 2>/dev/null ||
    fail "openssl could not write the signing key's public half"
STANDIN_SCRIPT=$ROOT/scripts/apns-h2-standin.js
STANDIN_ARGS=(--auth-key "$WORK/auth-public.pem" --key-id "$KEY_ID" --team-id "$TEAM_ID")
write_config() { # $1 stand-in port: $WORK/apns.json, app "ios" sending to the stand-in
    printf '{"apps":[{"name":"ios","provider":"apns","key_file":"%s","key_id":"%s","team_id":"%s","topic":"%s","endpoint":"https://127.0.0.1:%s"}]}\n' \
        "$KEY_FILE" "$KEY_ID" "$TEAM_ID" "$TOPIC" "$1" >"$WORK/apns.json"
}
# A provider token for h2load: ES256 over header.claims with the run's key, as Apple wants it and Herald makes it.
provider_token() {
    node -e '
        const crypto = require("crypto"), fs = require("fs");
        const [keyFile, kid, iss] = process.argv.slice(1);
        const part = (object) => Buffer.from(JSON.stringify(object)).toString("base64url");
        const input = part({ alg: "ES256", kid }) + "." + part({ iss, iat: Math.floor(Date.now() / 1000) });
        const signature = crypto.sign("sha256", Buffer.from(input), { key: fs.readFileSync(keyFile), dsaEncoding: "ieee-p1363" });
        process.stdout.write(input + "." + signature.toString("base64url"));' "$KEY_FILE" "$KEY_ID" "$TEAM_ID"
}

# --- the backlog (common.sh's v1_messages, in the shape ingest stores a v1 message to an APNs app) ----------
STORED_PAYLOAD='{"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},"apns":{"payload":{"aps":{"badge":1,"sound":"default"}}}}'
make_backlog() { # $1 path, $2 messages
    local distinct
    # Device tokens: 64 hex digits (32 bytes, as Apple's), distinct (the message's number in the last 56), in random
    # order (the first 8 a hash of it).
    generate_backlog "$1" ios < <(v1_messages "$2" ios "$STORED_PAYLOAD" \
        "printf('%08x%056x', (value * 2654435761) & 4294967295, value)")
    distinct=$(sqlite3 "$1" "SELECT count(DISTINCT token) FROM deliveries
        WHERE length(token) = 64 AND token NOT GLOB '*[^0-9a-f]*'")
    (($2 == distinct)) || fail "the backlog has $distinct distinct 64-hex-digit tokens, not $2"
}

# --- Herald (common.sh's drain, poller and rate_window) ---------------------------------------------------
CONFIG=$WORK/apns.json
APP=ios

# One drain of the backlog at the current stand-in. Sets H_RATE H_CPU_US H_CONN H_SESSIONS H_HWM H_WIRE H_COUNTED
# H_DUPLICATES H_BAD_JWT H_JWTS H_OVER_LIMIT, and H_STANDIN_PCT H_OTHERS_PCT H_STEAL_PCT (% of one core over the
# rate window: the stand-in; every other process, the poller's curl and awk included; steal).
measure_herald() { # $1 template database
    local db=$WORK/run.db polls=$WORK/polls.txt before
    cp "$1" "$db"
    rm -f "$db-wal" "$db-shm"
    before=$(standin_stats)
    drain "$db" "$polls"
    stop_paused_drain "$db" ios "$before"
    H_SESSIONS=$(stat_growth "$before" "$AFTER" sessions)
    H_BAD_JWT=$(stat_growth "$before" "$AFTER" bad_jwt)
    H_JWTS=$(stat_growth "$before" "$AFTER" jwts)
    H_OVER_LIMIT=$(stat_growth "$before" "$AFTER" over_limit)
    check_delivered "$db" queued
    # The rate window: from RAMP s after the first delivery to the 95 % mark, or DURATION s later at most.
    read -r H_RATE H_CPU_US H_CONN H_HWM H_STANDIN_PCT H_OTHERS_PCT H_STEAL_PCT <<<"$(rate_window "$polls")"
    rm -f "$db" "$db-wal" "$db-shm" "$db.lock"
}

# h2load with Herald's requests in flight: the body and apns-* headers of one of Herald's requests as the stand-in
# captured them, at a device token of the same shape that is not in the backlog, with a provider token signed here.
# Sets L_RATE L_CONNECTIONS.
measure_h2load() {
    local out=$WORK/h2load.out connections=$(((CONCURRENCY + STREAMS - 1) / STREAMS)) token jwt line
    local -a headers=()
    standin_stats >"$WORK/stats.json" || fail "the stand-in's /stats did not answer"
    # The first token the stand-in kept: its body into body.json, its apns-* headers one per line.
    node -e '
        const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
        const token = Object.keys(s.bodies || {})[0];
        if (!token) process.exit(1);
        require("fs").writeFileSync(process.argv[2], s.bodies[token]);
        for (const [name, value] of Object.entries(s.headers[token])) console.log(`${name}: ${value}`);' \
        "$WORK/stats.json" "$WORK/body.json" >"$WORK/headers.txt" || fail "the stand-in captured no request from Herald"
    while IFS= read -r line; do headers+=(-H "$line"); done <"$WORK/headers.txt"
    grep -q '^apns-topic: ' "$WORK/headers.txt" || fail "Herald's request had no apns-topic: $(cat "$WORK/headers.txt")"
    token=$(printf 'f%.0s' $(seq 64))
    jwt=$(provider_token) || fail "could not sign a provider token for h2load"
    h2load -c "$connections" -m "$STREAMS" -t "$H2LOAD_THREADS" -D "$DURATION" --warm-up-time=2 \
        -H "authorization: bearer $jwt" "${headers[@]}" -d "$WORK/body.json" \
        "https://127.0.0.1:$STANDIN_PORT/3/device/$token" >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$out" >&2
        fail "h2load failed"
    }
    CHILD_PID=""
    grep -q '^status codes: .* 0 4xx, 0 5xx' "$out" || {
        cat "$out" >&2
        fail "h2load saw errors (a provider token the stand-in refused answers 403)"
    }
    L_RATE=$(awk '/^finished in/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "req/s,") { print $i; exit } }' "$out")
    L_CONNECTIONS=$connections
}

# --- the run -----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $RUNS runs;" \
    "delays $DELAYS ms; backlog $(fmt "$BACKLOG"); default settings (APNs concurrency $CONCURRENCY); --durability full"
log "  node $(node --version); $(h2load --version 2>&1 | head -1); $(openssl version | cut -d' ' -f1-2)"
log "generating the backlog: $(fmt "$BACKLOG") single-token messages to app ios"
make_backlog "$WORK/template.db" "$BACKLOG"

declare -A RATE L CPU CONN SESS HWM OTHERS
for ((run = 1; run <= RUNS; run++)); do
    for delay in $DELAYS; do
        start_standin "$delay"
        write_config "$STANDIN_PORT"
        measure_herald "$WORK/template.db"
        ((H_DUPLICATES == 0)) || fail "the stand-in answered $H_DUPLICATES apns-ids twice"
        ((H_WIRE == H_COUNTED)) || fail "the stand-in received $H_WIRE requests, Herald accounted for $H_COUNTED"
        ((H_BAD_JWT == 0)) || fail "the stand-in could not verify the provider token of $H_BAD_JWT of Herald's requests"
        measure_h2load
        stop_pid "$STANDIN_PID" TERM
        STANDIN_PID=""
        RATE[$delay]+=" $H_RATE" L[$delay]+=" $L_RATE" CPU[$delay]+=" $H_CPU_US" CONN[$delay]+=" $H_CONN"
        SESS[$delay]+=" $H_SESSIONS" HWM[$delay]+=" $H_HWM" OTHERS[$delay]+=" $H_OTHERS_PCT"
        log "run $run/$RUNS  ${delay} ms  herald $(fmt "$H_RATE") sends/s | h2load -c $L_CONNECTIONS -m $STREAMS" \
            "$(fmt "$L_RATE") req/s | ratio $(ratio "$H_RATE" "$L_RATE") | connections: herald held $H_CONN at most," \
            "stand-in accepted $H_SESSIONS | CPU $H_CPU_US us/send | peak RSS $H_HWM MiB |" \
            "wire $H_WIRE = accounted $H_COUNTED, duplicates $H_DUPLICATES, provider tokens $H_JWTS (unverified" \
            "$H_BAD_JWT), streams over SETTINGS $H_OVER_LIMIT | % of a core in the window: stand-in $H_STANDIN_PCT," \
            "other processes $H_OTHERS_PCT, steal $H_STEAL_PCT"
    done
done

# --- the table ---------------------------------------------------------------------------------------------
met() { awk -v a="$1" -v t="$2" -v op="${3:-ge}" 'BEGIN { print ((op == "ge" ? a >= t : a <= t) ? "met" : "NOT met") }'; }
row() { printf '%-44s %12s %20s %7s %18s\n' "$@"; }
bound=$(((CONCURRENCY + STREAMS - 1) / STREAMS + 1))
echo
echo "Herald APNs, median of $RUNS runs, default settings (concurrency $CONCURRENCY), TLS + HTTP/2 stand-in for Apple" \
    "(node, $STREAMS streams/connection, every provider token verified) on 127.0.0.1, $(nproc) cores, h2load on the same machine"
row figure value baseline ratio target
for delay in $DELAYS; do
    # shellcheck disable=SC2086
    {
        r=$(median ${RATE[$delay]})
        l=$(median ${L[$delay]})
        c=$(median ${CPU[$delay]})
        k=$(median ${CONN[$delay]})
        s=$(median ${SESS[$delay]})
        h=$(median ${HWM[$delay]})
    }
    target="-" cpu_target="-"
    if ((delay == 30)); then
        target=">= $(fmt $TARGET_RATE_30) $(met "$r" $TARGET_RATE_30)"
        cpu_target="<= $TARGET_CPU_US $(met "$c" $TARGET_CPU_US le)"
    fi
    row "${delay} ms: sends/s" "$(fmt "$r")" "h2load $(fmt "$l")" "$(ratio "$r" "$l")" "$target"
    row "${delay} ms: connections held (stand-in saw)" "$k ($s)" - - "<= $bound $(met "$s" $bound le)"
    row "${delay} ms: Herald CPU per send (us)" "$c" - - "$cpu_target"
    row "${delay} ms: Herald peak RSS (MiB)" "$h" - - -
    row "${delay} ms: apns-ids answered twice" 0 - - "0 met"
done
for delay in $DELAYS; do
    echo "runs ${delay} ms: herald${RATE[$delay]}; h2load${L[$delay]}; cpu us${CPU[$delay]}; connections${CONN[$delay]};" \
        "sessions${SESS[$delay]}; peak RSS MiB${HWM[$delay]}; other processes % of a core${OTHERS[$delay]}"
done
echo "check: every request at the stand-in was one Herald accounted for, none was answered twice, every provider token" \
    "verified, every finished delivery was delivered"
