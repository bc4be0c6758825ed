#!/usr/bin/env bash
# Web Push benchmark (SPEC §10 / the Web Push issue: one push-service origin answering after 30 ms, >= 5,000
# encrypted sends/s on this machine, each a fresh ECDH + AES-GCM; CPU per send beside its floor measured in the same
# run): Herald with its default settings sending single-subscription messages of a Web Push
# app (SPEC §16) over TLS + HTTP/2 to a stand-in push service (scripts/webpush-h2-standin.js under node: POST
# /push/<name> answered 201 after a fixed delay, 100 concurrent streams per connection, every VAPID header verified
# and one body in --decrypt-every decrypted with node's crypto), beside h2load (nghttp2) sending one of Herald's
# requests as the stand-in captured it, with the same connections x streams, in the same run. Figures:
#   rate         deliveries that reached `delivered` per second: the slope of
#                herald_deliveries_total{app="web",outcome="delivered"} between the end of the ramp-up and the 95 %
#                mark of a preloaded backlog (after at most HERALD_BENCH_DURATION seconds)
#   h2load       requests/s of `h2load -c C -m M` for HERALD_BENCH_DURATION seconds, C x M = Herald's requests in
#                flight (its default concurrency, 1000: 10 connections x 100 streams); its requests are not
#                encrypted anew, so it is the ceiling of the stand-in and the loopback, not a like-for-like sender
#   cpu/send     Herald's process CPU time (user + system, /proc/PID/stat) over the rate window / sends in it,
#                beside its floor: the CPU time of one P-256 key generation + one ECDH (what RFC 8291 asks of every
#                message) with the libcrypto calls Herald makes, Benchmarks/webpush-floor.c (cc -O2 -lcrypto), 3 s
#                after each drain; and of one ECDH alone (the figure `openssl speed ecdhp256` gives)
#   accounting   the stand-in's count of requests against herald_fcm_requests_total{app="web"}, the subscriptions
#                it answered 201 twice for one plaintext (duplicates, must be 0), the VAPID headers it could not
#                verify and the bodies it could not decrypt (both must be 0)
# The backlog is generated with the sqlite3 shell in the shape `POST /v1/messages` stores a v1 message to a Web
# Push app, one distinct subscription per message (endpoint https://127.0.0.1:<stand-in>/push/b-<n>, all with the
# keys of the stand-in's subscription "b", so it can decrypt them), into a database made by `herald migrate` with
# app "web" paused; `herald resume web` starts the drain. The VAPID key (openssl) and the stand-in's self-signed
# certificate (trusted through SSL_CERT_FILE) are made for the run; the config sets allow_private_endpoints (the
# stand-in is on 127.0.0.1, SPEC §19). Nothing leaves loopback.
#
# Usage, from the repository root (root on Debian/Ubuntu installs node, openssl and nghttp2-client if missing):
#   Benchmarks/webpush.sh
# Environment (all optional):
#   HERALD_BENCH_RUNS=3              rounds; the table shows medians
#   HERALD_BENCH_DELAY=30            the stand-in's answer delay (ms)
#   HERALD_BENCH_BACKLOG=100000      single-subscription messages preloaded per measurement
#   HERALD_BENCH_DURATION=15         seconds of h2load, and at most of Herald's rate window
#   HERALD_BENCH_RAMP=2              seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.2            seconds between two looks at /metrics
#   HERALD_BENCH_DECRYPT_EVERY=50    the stand-in decrypts one request in this many
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp where the databases go (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1        use the existing .build/release/herald
#   HERALD_BENCH_BINARY=PATH         use this herald binary (another commit's release build) instead
#   HERALD_BENCH_KEEP=1              keep the work directory
# Exit status: non-zero on errors (a tool failing, Herald stopping, a delivery not ending `delivered`, requests
# unaccounted for or answered twice, a VAPID header or body the stand-in refused, h2load seeing errors), never
# because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings RUNS=3 DELAY=30 BACKLOG=100000 DURATION=15 RAMP=2 POLL=0.2 DECRYPT_EVERY=50
CONCURRENCY=1000 # Herald's default for a Web Push app; h2load gets the same requests in flight
STREAMS=100
TARGET_RATE=5000

standin_run
bench_tools node openssl h2load sqlite3 curl
build_herald
make_work webpush

# --- the stand-in, for the whole run (the backlog's endpoints name its port), the VAPID key and app "web" -----
start_webpush_standin "$DELAY" "$DECRYPT_EVERY"

# --- the backlog (in the shape ingest stores a v1 message to a Web Push app) ----------------------------------
STORED_PAYLOAD='{"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},"webpush":{"notification":{"icon":"/icons/goal.png"},"fcm_options":{"link":"https://example.com/m/20260611"}}}'
make_backlog() { # $1 path, $2 messages
    generate_backlog "$1" web < <(v1_messages "$2" web "$STORED_PAYLOAD" \
        "'https://127.0.0.1:$STANDIN_PORT/push/b-' || value || '#p256dh=$P256DH&auth=$AUTH'")
}

# --- Herald (common.sh's drain, poller and rate_window) ---------------------------------------------------
# One drain of the backlog. Sets H_RATE H_CPU_US H_CONN H_HWM H_WIRE H_COUNTED H_DUPLICATES H_BAD_VAPID
# H_DECRYPTED H_DECRYPT_FAILURES H_STANDIN_PCT H_OTHERS_PCT H_STEAL_PCT.
measure_herald() { # $1 template database
    local db=$WORK/run.db polls=$WORK/polls.txt before
    cp "$1" "$db"
    rm -f "$db-wal" "$db-shm"
    # Each drain sends the same messages again: duplicates are counted within one drain.
    curl -fsS --max-time 5 -X POST "http://127.0.0.1:$STATS_PORT/forget-deliveries" ||
        fail "the stand-in did not forget its deliveries"
    before=$(standin_stats)
    drain "$db" "$polls"
    stop_paused_drain "$db" web "$before"
    H_BAD_VAPID=$(stat_growth "$before" "$AFTER" bad_vapid)
    H_DECRYPTED=$(stat_growth "$before" "$AFTER" decrypted)
    H_DECRYPT_FAILURES=$(stat_growth "$before" "$AFTER" decrypt_failures)
    check_delivered "$db" queued
    read -r H_RATE H_CPU_US H_CONN H_HWM H_STANDIN_PCT H_OTHERS_PCT H_STEAL_PCT <<<"$(rate_window "$polls")"
    rm -f "$db" "$db-wal" "$db-shm" "$db.lock"
}

# h2load with Herald's requests in flight: the first request of Herald's the stand-in captured (its encrypted body,
# VAPID header and the rest), to one more subscription name. Sets L_RATE L_CONNECTIONS.
measure_h2load() {
    local out=$WORK/h2load.out connections=$(((CONCURRENCY + STREAMS - 1) / STREAMS)) line
    local -a headers=()
    standin_stats >"$WORK/stats.json" || fail "the stand-in's /stats did not answer"
    node -e '
        const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
        if (!s.sample) process.exit(1);
        require("fs").writeFileSync(process.argv[2], Buffer.from(s.sample.body, "base64"));
        for (const [name, value] of Object.entries(s.sample.headers)) {
            if (name !== "content-length") console.log(`${name}: ${value}`);
        }' "$WORK/stats.json" "$WORK/body.bin" >"$WORK/headers.txt" || fail "the stand-in captured no request from Herald"
    while IFS= read -r line; do headers+=(-H "$line"); done <"$WORK/headers.txt"
    h2load -c "$connections" -m "$STREAMS" -t 1 -D "$DURATION" --warm-up-time=2 "${headers[@]}" -d "$WORK/body.bin" \
        "https://127.0.0.1:$STANDIN_PORT/push/h2load-0" >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$out" >&2
        fail "h2load failed"
    }
    CHILD_PID=""
    grep -q '^status codes: .* 0 4xx, 0 5xx' "$out" || {
        cat "$out" >&2
        fail "h2load saw errors"
    }
    L_RATE=$(awk '/^finished in/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "req/s,") { print $i; exit } }' "$out")
    L_CONNECTIONS=$connections
}

# The floor of a send on this machine, in microseconds of CPU: "<key pair + ECDH> <ECDH alone>".
FLOOR=$WORK/webpush-floor
cc -O2 -o "$FLOOR" "$ROOT/Benchmarks/webpush-floor.c" -lcrypto || fail "Benchmarks/webpush-floor.c did not compile"

# --- the run -----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $RUNS runs;" \
    "delay $DELAY ms; backlog $(fmt "$BACKLOG"); default settings (Web Push concurrency $CONCURRENCY); --durability full"
log "  $HERALD; node $(node --version); $(h2load --version 2>&1 | head -1); $(openssl version | cut -d' ' -f1-2)"
log "generating the backlog: $(fmt "$BACKLOG") single-subscription messages to app web"
make_backlog "$WORK/template.db" "$BACKLOG"

RATES="" LS="" CPUS="" CONNS="" HWMS="" OTHERS="" FLOORS="" ECDHS=""
for ((run = 1; run <= RUNS; run++)); do
    measure_herald "$WORK/template.db"
    ((H_DUPLICATES == 0)) || fail "the stand-in answered $H_DUPLICATES subscriptions twice for one plaintext"
    ((H_WIRE == H_COUNTED)) || fail "the stand-in received $H_WIRE requests, Herald accounted for $H_COUNTED"
    ((H_BAD_VAPID == 0)) || fail "the stand-in could not verify the VAPID header of $H_BAD_VAPID of Herald's requests"
    ((H_DECRYPT_FAILURES == 0)) || fail "the stand-in could not decrypt $H_DECRYPT_FAILURES of Herald's bodies"
    ((H_DECRYPTED > 0)) || fail "the stand-in decrypted none of Herald's bodies"
    measure_h2load
    read -r SEND_FLOOR ECDH <<<"$("$FLOOR" 3)"
    RATES+=" $H_RATE" LS+=" $L_RATE" CPUS+=" $H_CPU_US" CONNS+=" $H_CONN" HWMS+=" $H_HWM" OTHERS+=" $H_OTHERS_PCT"
    FLOORS+=" $SEND_FLOOR" ECDHS+=" $ECDH"
    log "run $run/$RUNS  herald $(fmt "$H_RATE") sends/s | h2load -c $L_CONNECTIONS -m $STREAMS $(fmt "$L_RATE") req/s |" \
        "CPU $H_CPU_US us/send (floor: key pair + ECDH $SEND_FLOOR us, ECDH $ECDH us) | connections $H_CONN | peak RSS $H_HWM MiB |" \
        "wire $H_WIRE = accounted $H_COUNTED, duplicates $H_DUPLICATES, decrypted $H_DECRYPTED (failures" \
        "$H_DECRYPT_FAILURES), VAPID unverified $H_BAD_VAPID | % of a core in the window: stand-in $H_STANDIN_PCT," \
        "other processes $H_OTHERS_PCT, steal $H_STEAL_PCT"
done

# --- the table ---------------------------------------------------------------------------------------------
met() { awk -v a="$1" -v t="$2" 'BEGIN { print (a >= t ? "met" : "NOT met") }'; }
row() { printf '%-40s %12s %24s %7s %16s\n' "$@"; }
# shellcheck disable=SC2086
{
    r=$(median $RATES)
    l=$(median $LS)
    c=$(median $CPUS)
    k=$(median $CONNS)
    h=$(median $HWMS)
    f=$(median $FLOORS)
    e=$(median $ECDHS)
}
echo
echo "Herald Web Push, median of $RUNS runs, default settings (concurrency $CONCURRENCY), one push-service origin" \
    "(node stand-in, $STREAMS streams/connection, ${DELAY} ms) on 127.0.0.1, $(nproc) cores, h2load on the same machine"
row figure value baseline ratio target
row "encrypted sends/s" "$(fmt "$r")" "h2load $(fmt "$l")" "$(ratio "$r" "$l")" ">= $(fmt $TARGET_RATE) $(met "$r" $TARGET_RATE)"
row "Herald CPU per send (us)" "$c" "key pair + ECDH $f us" "$(ratio "$c" "$f")" -
row "  (one ECDH alone, us)" "$e" - - -
row "connections held" "$k" - - -
row "Herald peak RSS (MiB)" "$h" - - -
row "subscriptions answered twice" 0 - - "0 met"
echo "runs: herald$RATES; h2load$LS; cpu us$CPUS; floor us$FLOORS; ecdh us$ECDHS; connections$CONNS; peak RSS MiB$HWMS;" \
    "other processes % of a core$OTHERS"
echo "check: every request at the stand-in was one Herald accounted for, none was answered twice, every VAPID header" \
    "verified, every decrypted body decrypted, every finished delivery was delivered"
