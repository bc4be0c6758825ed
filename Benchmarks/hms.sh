#!/usr/bin/env bash
# HMS Push Kit benchmark (SPEC §21: >= 100,000 token deliveries/s with 1000-token requests, and no duplicates):
# Herald with its default settings draining a preloaded backlog of messages of 1000 device tokens each, for an HMS
# app (SPEC §21) whose endpoint and token_uri are a stand-in for Huawei (scripts/hms-h2-standin.js under node: TLS,
# HTTP/2 with HTTP/1.1 for a client that does not offer it, the client-credentials token endpoint, and messages:send
# answered 80000000 after a fixed delay playing the round trip to Huawei, 30 ms). Each run prints:
#   rate         token deliveries that reached `delivered` per second: the slope of
#                herald_deliveries_total{app="huawei",outcome="delivered"} between the end of the ramp-up and the 95 %
#                mark of the backlog (after at most HERALD_BENCH_DURATION seconds)
#   requests/s   the same window in requests (rate / 1000)
#   cpu/token    Herald's process CPU time (user + system) over the window / deliveries in it
#   peak RSS     Herald's VmHWM
#   accounting   the stand-in's count of requests and tokens against the backlog, tokens that arrived twice
#                (duplicates, must be 0), bodies it refused as no HMS message and sends without its access token
#                (both must be 0)
# The backlog is generated with the sqlite3 shell in the shape `POST /v1/messages` stores a v1 message with
# "tokens" to an HMS app (common.sh's hms_backlog), into a database made by `herald migrate` with app "huawei"
# paused; `herald resume huawei` starts the drain. (Benchmarks/hms-writer.sh counts the database's share of the
# writer's work per token on the same backlog.) The stand-in's self-signed certificate is trusted through
# SSL_CERT_FILE. Nothing leaves loopback.
#
# Usage, from the repository root (needs node, openssl, sqlite3 and curl):
#   Benchmarks/hms.sh
# Environment (all optional):
#   HERALD_BENCH_RUNS=3           rounds; the table ends with the medians
#   HERALD_BENCH_DELAY=30         the stand-in's answer delay (ms)
#   HERALD_BENCH_MESSAGES=300     1000-token messages preloaded per run
#   HERALD_BENCH_DURATION=15      seconds at most of the rate window
#   HERALD_BENCH_RAMP=1           seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.2         seconds between two looks at /metrics
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp  where the databases go (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1     use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1           keep the work directory
# Exit status: non-zero on errors (a tool missing, Herald stopping, a delivery not ending `delivered`, a token sent
# twice, a body the stand-in refused), never because the target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings RUNS=3 DELAY=30 MESSAGES=300 DURATION=15 RAMP=1 POLL=0.2
STREAMS=100
TOKENS=1000 # a request's worth: Herald splits a message's tokens into requests of 1000
BACKLOG=$((MESSAGES * TOKENS))
TARGET_RATE=100000

standin_run
bench_tools node openssl sqlite3 curl
build_herald
make_work hms

# --- the stand-in and the app ------------------------------------------------------------------------------
standin_certificate
STANDIN_SCRIPT=$ROOT/scripts/hms-h2-standin.js
start_standin "$DELAY"
(umask 077 && printf 'bench-secret\n' >"$WORK/hms-secret")
CONFIG=$WORK/hms.json
APP=huawei
printf '{"apps":[{"name":"huawei","provider":"hms","app_id":"10000001","client_secret_file":"%s","endpoint":"https://127.0.0.1:%s","token_uri":"https://127.0.0.1:%s/oauth2/v3/token"}]}\n' \
    "$WORK/hms-secret" "$STANDIN_PORT" "$STANDIN_PORT" >"$CONFIG"

# --- the backlog: MESSAGES messages of 1000 tokens each, as ingest stores them -------------------------------
TEMPLATE=$WORK/template.db
log "preloading $MESSAGES messages of $TOKENS tokens"
hms_backlog "$TEMPLATE" "$MESSAGES"

# --- one drain -----------------------------------------------------------------------------------------------
# Sets H_RATE H_CPU_US H_HWM H_REQUESTS H_TOKENS H_DUPLICATES H_BAD H_BAD_AUTH.
measure_herald() {
    local db=$WORK/run.db polls=$WORK/polls.txt before after
    cp "$TEMPLATE" "$db"
    rm -f "$db-wal" "$db-shm"
    curl -fsS --max-time 5 -X POST "http://127.0.0.1:$STATS_PORT/forget" >/dev/null || fail "the stand-in did not forget"
    before=$(standin_stats)
    drain "$db" "$polls"
    sleep 1
    after=$(standin_stats)
    stop_drain
    H_REQUESTS=$(stat_growth "$before" "$after" requests)
    H_TOKENS=$(stat_growth "$before" "$after" tokens)
    H_DUPLICATES=$(stat_growth "$before" "$after" duplicates)
    H_BAD=$(stat_growth "$before" "$after" bad_requests)
    H_BAD_AUTH=$(stat_growth "$before" "$after" bad_auth)
    check_delivered "$db"
    ((H_DUPLICATES == 0)) || fail "$H_DUPLICATES tokens reached the stand-in twice"
    ((H_BAD == 0 && H_BAD_AUTH == 0)) || fail "the stand-in refused $H_BAD bodies and $H_BAD_AUTH access tokens"
    local _conn _standin _others _steal
    read -r H_RATE H_CPU_US _conn H_HWM _standin _others _steal <<<"$(rate_window "$polls")"
}

printf '%-4s %14s %11s %10s %9s %9s %11s %10s\n' run "deliveries/s" requests/s cpu/token "RSS MiB" requests tokens duplicates
rates=()
cpus=()
for ((run = 1; run <= RUNS; run++)); do
    measure_herald
    rates+=("$H_RATE")
    cpus+=("$H_CPU_US")
    printf '%-4s %14s %11s %8.2fus %9s %9s %11s %10s\n' "$run" "$(fmt "$H_RATE")" "$(fmt "$(ratio "$H_RATE" "$TOKENS")")" \
        "$H_CPU_US" "$H_HWM" "$H_REQUESTS" "$H_TOKENS" "$H_DUPLICATES"
done
rate=$(median "${rates[@]}")
printf 'median: %s token deliveries/s (target >= %s) at a %s ms stand-in, %s us CPU a token\n' "$(fmt "$rate")" \
    "$(fmt "$TARGET_RATE")" "$DELAY" "$(median "${cpus[@]}")"
