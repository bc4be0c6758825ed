#!/usr/bin/env bash
# Network-fault benchmark (SPEC §10, the fault rows; §11, "network faults cost seconds, not minutes"): Herald with
# its default settings draining HERALD_BENCH_MESSAGES single-token FCM v1 messages to the TLS + HTTP/2 stand-in of
# Benchmarks/v1.sh (scripts/fcm-h2-standin.js: answers after HERALD_BENCH_DELAY ms, 100 streams per connection)
# through scripts/tcp-fault-proxy.js. Herald's v1 endpoint is the proxy's port, so every messages:send connection
# goes through it; TLS passes through untouched (the stand-in's certificate is for IP 127.0.0.1, whatever the port).
# The OAuth token endpoint is the stand-in's own port: the faults are the send path's. Once the stand-in has received
# HERALD_BENCH_FAULT_AT requests, the proxy plays one fault on every connection open at that moment; connections
# opened afterwards work normally. One run per fault (HERALD_BENCH_FAULTS):
#   reset    every connection reset at once (Herald reads ECONNRESET): a load balancer's restart, a NAT flush
#   freeze   every connection silent from then on, neither side closed or told (what either side sends is dropped):
#            a dead NAT entry, a half-open path; no PING is answered
# Figures of each run, printed beside their targets (SPEC §10):
#   stall        the longest gap between two consecutive requests arriving at the stand-in (its --arrivals log, in
#                microseconds), from the first arrival to the last: <= 3 s after a reset, <= 15 s after a freeze. A
#                run not drained HERALD_BENCH_CAP seconds after the fault is "not resumed", and its gap from the last
#                arrival to the cap counts as a stall too
#   delivered    distinct tokens the stand-in received, and deliveries the database says are `delivered` (read
#                after Herald has stopped), against the messages: all of them
#   duplicates   requests the stand-in received minus distinct tokens (a token is one message's; a retry's body
#                differs from the first's, its TTL counted down): <= the requests in flight at the fault
#   in flight    the requests Herald had in flight at the fault. Herald has no in-flight gauge: it is taken as the
#                requests that failed as reset or timeout after the fault (herald_fcm_requests_total), at most
#                Herald's default v1 concurrency (1000, the most it ever has in flight): a reset fails every request
#                in flight on the connections at once, a freeze leaves them to time out. Also shown: the requests the
#                stand-in had received and not answered just before the fault (its in_flight, which misses requests
#                on their way and answers on their way back), and the connections the proxy faulted and accepted
# The messages are ingested through POST /v1/messages/batch (HERALD_BENCH_BATCH_SIZE a request) with app "default"
# paused; `herald resume default` starts the drain. Nothing leaves loopback.
#
# Usage, from the repository root (as root on Debian/Ubuntu it runs scripts/install-deps for node and openssl):
#   Benchmarks/netfault.sh
# Environment (all optional):
#   HERALD_BENCH_FAULTS="reset freeze"  which runs, in order
#   HERALD_BENCH_MESSAGES=60000       single-token v1 messages per run (a multiple of HERALD_BENCH_BATCH_SIZE)
#   HERALD_BENCH_BATCH_SIZE=500       messages per batch request when ingesting them
#   HERALD_BENCH_FAULT_AT=20000       requests received at the stand-in when the fault is played
#   HERALD_BENCH_DELAY=30             the stand-in's answer delay (ms)
#   HERALD_BENCH_CAP=300              seconds after the fault before a run not drained is given up ("not resumed")
#   HERALD_BENCH_POLL=0.1             seconds between two looks at the stand-in's counts (before the fault)
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp  where the databases go (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1         use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1               keep the work directory (logs, arrival logs, databases)
# Exit status: non-zero on errors (a tool failing, Herald stopping, a message not acknowledged, sending never reaching
# HERALD_BENCH_FAULT_AT, a fault that found no connection), never because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings MESSAGES=60000 BATCH_SIZE=500 FAULT_AT=20000 DELAY=30 CAP=300 POLL=0.1
FAULTS=${HERALD_BENCH_FAULTS:-reset freeze}
STREAMS=100 # the stand-in's streams per connection, as Google's
CONCURRENCY=1000 # Herald's default for a v1 app: the most requests it has in flight
TARGET_STALL_RESET_S=3
TARGET_STALL_FREEZE_S=15

((MESSAGES % BATCH_SIZE == 0)) || fail "HERALD_BENCH_MESSAGES must be a multiple of HERALD_BENCH_BATCH_SIZE"
((FAULT_AT < MESSAGES)) || fail "HERALD_BENCH_FAULT_AT must be below HERALD_BENCH_MESSAGES"
for fault in $FAULTS; do [[ $fault =~ ^(reset|freeze)$ ]] || fail "unknown fault '$fault' in HERALD_BENCH_FAULTS"; done

WORK=""
HERALD_PID=""
HERALD_LOG=""
STANDIN_PID=""
PROXY_PID=""
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop_herald quiet || true
    stop_pid "$PROXY_PID" TERM
    stop_pid "$STANDIN_PID" TERM
    remove_work
    exit "$status"
}
trap_cleanup

# --- tools -------------------------------------------------------------------------------------------------
bench_tools node openssl sqlite3 curl
build_herald
make_work netfault

now_us() { echo "${EPOCHREALTIME/./}"; }
seconds() { awk -v us="$1" 'BEGIN { printf "%.1f", us / 1e6 }'; }
met() { awk -v a="$1" -v t="$2" 'BEGIN { print (a <= t ? "met" : "NOT met") }'; }

# --- the proxy ---------------------------------------------------------------------------------------------
PROXY_PORT=""
CONTROL_PORT=""
start_proxy() { # $1 target port
    start_node proxy control_port "the proxy" "$ROOT/scripts/tcp-fault-proxy.js" --target "127.0.0.1:$1"
    PROXY_PID=$NODE_PID
    PROXY_PORT=$(sed 's/.*"port":\([0-9]*\).*/\1/' "$WORK/proxy.out")
    CONTROL_PORT=$(sed 's/.*"control_port":\([0-9]*\).*/\1/' "$WORK/proxy.out")
}
proxy() { # $1 path; $2 method (default GET)
    curl -fsS --max-time 5 -X "${2:-GET}" "http://127.0.0.1:$CONTROL_PORT/$1"
}

# --- Herald ------------------------------------------------------------------------------------------------
PORT=""
start_herald() { # $1 database, $2 the log's name; the v1 endpoint is the proxy
    local tries waited
    HERALD_LOG=$WORK/herald-$2.log
    for tries in 1 2 3 4 5; do
        PORT=$(free_port)
        SSL_CERT_FILE=$WORK/cert.pem "$HERALD" serve --db "$1" --listen "127.0.0.1:$PORT" \
            --fcm-service-account "$WORK/service-account.json" --fcm-endpoint "https://127.0.0.1:$PROXY_PORT" \
            --durability full 2>"$HERALD_LOG" &
        HERALD_PID=$!
        waited=0
        while ((waited < 300)) && kill -0 "$HERALD_PID" 2>/dev/null; do
            if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/healthz" 2>/dev/null; then return 0; fi
            sleep 0.1
            waited=$((waited + 1))
        done
        stop_herald quiet
    done
    tail -5 "$HERALD_LOG" >&2
    fail "could not start herald"
}
herald_metrics() { curl -fsS --max-time 5 "http://127.0.0.1:$PORT/metrics"; }
failed_requests() { # $1 metrics text: requests that ended reset or timeout
    echo $(($(metric "$1" 'herald_fcm_requests_total{app="default",code="reset"}') +
        $(metric "$1" 'herald_fcm_requests_total{app="default",code="timeout"}')))
}
delivered_metric() { metric "$1" 'herald_deliveries_total{app="default",outcome="delivered"}'; }

# Into a new database, through the batch endpoint of the running Herald (app "default" paused).
ingest() {
    local stored
    find "$WORK/batches" -name '*.json' | sort | xargs -P 2 -I '{}' curl -sS --max-time 120 -o '{}.out' \
        -H 'content-type: application/json' --data-binary '@{}' "http://127.0.0.1:$PORT/v1/messages/batch" ||
        fail "a batch request failed"
    stored=$(cat "$WORK/batches"/*.out | grep -o '"deliveries":1}' | wc -l)
    ((stored == MESSAGES)) || fail "$stored of $MESSAGES messages acknowledged; $(head -c 300 "$(
        grep -L '"deliveries":1}' "$WORK/batches"/*.out | head -1)")"
    rm -f "$WORK/batches"/*.out
}

# --- one run -----------------------------------------------------------------------------------------------
# Sets R_STALL_US R_STALL_AT R_RESUMED R_DISTINCT R_REQUESTS R_DUPLICATES R_DB_DELIVERED R_IN_FLIGHT R_STANDIN_IN_FLIGHT
# R_FAULTED R_ACCEPTED_AFTER R_FAILED R_DRAIN_S R_RATE_BEFORE R_STATES.
run_fault() { # $1 reset | freeze
    local fault=$1 db=$WORK/$1.db arrivals=$WORK/arrivals-$1.txt stats requests t_resume t_fault="" t_end
    local answer text delivered=0 accepted_at capped=0 failed_before
    rm -f "$db" "$db-wal" "$db-shm" "$arrivals"
    start_standin "$DELAY" "$arrivals"
    write_service_account "$STANDIN_PORT"
    start_proxy "$STANDIN_PORT"
    migrate_and_pause "$db"
    start_herald "$db" "$fault"
    ingest
    "$HERALD" resume default --db "$db" >/dev/null 2>&1 || fail "herald resume failed"
    t_resume=$(now_us)

    # Until the stand-in has received FAULT_AT requests: then the fault, with the in-flight count just before it.
    while :; do
        kill -0 "$HERALD_PID" 2>/dev/null || fail "herald stopped during the drain: $(tail -3 "$HERALD_LOG")"
        stats=$(standin_stats) || fail "the stand-in's stats did not answer"
        requests=$(stat_of "$stats" requests)
        if ((requests >= FAULT_AT)); then break; fi
        (($(now_us) - t_resume < CAP * 1000000)) ||
            fail "sending never reached $FAULT_AT requests at the stand-in ($requests after $CAP s)"
        sleep "$POLL"
    done
    R_STANDIN_IN_FLIGHT=$(stat_of "$stats" in_flight)
    text=$(herald_metrics) || fail "herald's /metrics did not answer"
    failed_before=$(failed_requests "$text")
    answer=$(proxy "$fault" POST) || fail "the proxy's /$fault failed"
    t_fault=$(now_us)
    R_FAULTED=$(sed 's/.*:\([0-9]*\).*/\1/' <<<"$answer")
    ((R_FAULTED > 0)) || fail "the $fault found no connection open at the proxy"
    accepted_at=$(stat_of "$(proxy stats)" accepted)
    R_RATE_BEFORE=$(awk -v n="$requests" -v us=$((t_fault - t_resume)) 'BEGIN { printf "%.0f", n / (us / 1e6) }')

    # Until every message is delivered (Herald's count), or CAP s after the fault.
    while :; do
        kill -0 "$HERALD_PID" 2>/dev/null || fail "herald stopped after the $fault: $(tail -3 "$HERALD_LOG")"
        text=$(herald_metrics) || fail "herald's /metrics did not answer"
        delivered=$(delivered_metric "$text")
        ((delivered >= MESSAGES)) && break
        if (($(now_us) - t_fault >= CAP * 1000000)); then
            capped=1
            break
        fi
        sleep 0.5
    done
    t_end=$(now_us)
    R_DRAIN_S=$(seconds $((t_end - t_resume)))
    R_RESUMED=$((1 - capped))
    sleep 1 # answers counted at the stand-in but not yet at Herald
    text=$(herald_metrics) || fail "herald's /metrics did not answer"
    R_FAILED="reset $(metric "$text" 'herald_fcm_requests_total{app="default",code="reset"}')"
    R_FAILED+=", timeout $(metric "$text" 'herald_fcm_requests_total{app="default",code="timeout"}')"
    R_IN_FLIGHT=$(($(failed_requests "$text") - failed_before))
    ((R_IN_FLIGHT <= CONCURRENCY)) || R_IN_FLIGHT=$CONCURRENCY
    R_ACCEPTED_AFTER=$(($(stat_of "$(proxy stats)" accepted) - accepted_at))
    log "  $fault: Herald's warnings and errors (count, message):"
    { grep -E '"level":"(warn|error)"' "$HERALD_LOG" | grep -o '"msg":"[^"]*"' || true; } | sort | uniq -c |
        sort -rn | head -8 >&2 || true
    if ((capped)); then stop_herald quiet; else stop_herald; fi
    stop_pid "$PROXY_PID" TERM
    PROXY_PID=""
    stop_pid "$STANDIN_PID" TERM # flushes the arrival log
    STANDIN_PID=""

    R_DB_DELIVERED=$(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE state = 'delivered'")
    R_STATES=$(sqlite3 "$db" "SELECT state || ':' || count(*) FROM deliveries GROUP BY state" | tr '\n' ' ')
    R_REQUESTS=$(wc -l <"$arrivals")
    R_DISTINCT=$(cut -d' ' -f1 "$arrivals" | sort -u | wc -l)
    R_DUPLICATES=$((R_REQUESTS - R_DISTINCT))
    # The longest gap between consecutive arrivals, and when it began (seconds after the fault); a run given up
    # counts the time from its last arrival to the cap as well.
    read -r R_STALL_US R_STALL_AT <<<"$(cut -d' ' -f2 "$arrivals" | sort -n | awk -v fault="$t_fault" \
        -v capped="$capped" -v end="$t_end" '
        NR > 1 && $1 - last > gap { gap = $1 - last; at = last }
        { last = $1 }
        END {
            if (capped && end - last > gap) { gap = end - last; at = last }
            printf "%d %.1f\n", gap, (at - fault) / 1e6
        }')"
    [[ ${HERALD_BENCH_KEEP:-0} == 1 ]] || rm -f "$db" "$db-wal" "$db-shm" "$db.lock"
}

# --- the runs ----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; faults $FAULTS;" \
    "$(fmt "$MESSAGES") single-token v1 messages, the fault at $(fmt "$FAULT_AT") requests; stand-in ${DELAY} ms," \
    "$STREAMS streams/connection, through scripts/tcp-fault-proxy.js; default settings; --durability full"
log "  node $(node --version); $(openssl version | cut -d' ' -f1-2)"
standin_credentials
make_batches "$MESSAGES" n01

declare -a LINES
row() { printf '%-42s %26s %30s %8s\n' "$@"; }
for fault in $FAULTS; do
    log "run: $fault"
    run_fault "$fault"
    target_s=$TARGET_STALL_FREEZE_S done=frozen
    if [[ $fault == reset ]]; then target_s=$TARGET_STALL_RESET_S done=reset; fi
    stall=$(seconds "$R_STALL_US")
    if ((R_RESUMED)); then
        stall_text="$stall s"
        stall_met=$(met "$stall" "$target_s")
    else
        stall_text="not resumed (>= $stall s)"
        stall_met="NOT met"
    fi
    all=$((R_DISTINCT == MESSAGES && R_DB_DELIVERED == MESSAGES))
    log "  $fault: ${R_RATE_BEFORE} requests/s from the resume to the fault;" \
        "$R_STANDIN_IN_FLIGHT in flight at the stand-in; $R_FAULTED connections $done, $R_ACCEPTED_AFTER accepted" \
        "after; Herald's failed requests: $R_FAILED;" \
        "longest stall $stall s from $R_STALL_AT s after the fault; $R_REQUESTS requests, $R_DISTINCT distinct;" \
        "database: $R_STATES;" \
        "$( ((R_RESUMED)) && echo "drained $R_DRAIN_S s after the resume" || echo "given up $CAP s after the fault")"
    LINES+=("$(row "$fault: longest stall in sending" "$stall_text" "<= $target_s s" "$stall_met")")
    LINES+=("$(row "$fault: delivered (stand-in distinct / db)" "$(fmt "$R_DISTINCT") / $(fmt "$R_DB_DELIVERED")" \
        "$(fmt "$MESSAGES")" "$( ((all)) && echo met || echo "NOT met")")")
    LINES+=("$(row "$fault: duplicates (requests - distinct)" "$(fmt "$R_DUPLICATES")" \
        "<= in flight at fault $(fmt "$R_IN_FLIGHT")" "$(met "$R_DUPLICATES" "$R_IN_FLIGHT")")")
done

echo
echo "Herald network faults, default settings, $(fmt "$MESSAGES") single-token v1 messages to a TLS + HTTP/2 stand-in" \
    "(${DELAY} ms, $STREAMS streams/connection) through scripts/tcp-fault-proxy.js, the fault at $(fmt "$FAULT_AT")" \
    "requests; $(nproc) cores"
row figure value target ""
printf '%s\n' "${LINES[@]}"
