#!/usr/bin/env bash
# FCM HTTP v1 benchmark (SPEC §10, the v1 table): Herald with its default settings sending single-token messages over
# TLS + HTTP/2 to a stand-in for FCM (scripts/fcm-h2-standin.js under node: a token endpoint and messages:send that
# answer after a fixed delay playing the round trip to Google, 100 concurrent streams per connection), beside
# h2load (nghttp2) on the same stand-in with the same connections x streams, in the same run. For each delay
# (HERALD_BENCH_DELAYS, 30 and 100 ms):
#   rate         deliveries that reached `delivered` per second: the slope of herald_deliveries_total{delivered}
#                between the end of the ramp-up and the 95 % mark of a preloaded backlog (after at most
#                HERALD_BENCH_DURATION seconds)
#   h2load       requests/s of `h2load -c C -m M` for HERALD_BENCH_DURATION seconds, C x M = Herald's requests in
#                flight (its default v1 concurrency, 1000: 10 connections x 100 streams), sending the body and
#                Authorization header of Herald's first request as captured by the stand-in
#   connections  the most connections Herald held (herald_fcm_connections{app="default"}, sampled), and the TLS
#                sessions that carried Herald's messages:send requests at the stand-in over the whole drain (the
#                token endpoint's connection is not counted), against ceil(in-flight / 100) + 1
#   cpu/send     Herald's process CPU time (user + system, /proc/PID/stat) over the rate window / sends in it
#   peak RSS     Herald's VmHWM
#   accounting   the stand-in's count of messages:send requests against Herald's herald_fcm_requests_total (every
#                request on the wire is one Herald accounts for), and the stand-in's count of bodies that arrived
#                twice (must be 0)
# Two more figures (HERALD_BENCH_FIGURES), each in its own section below:
#   latency      ingest acknowledged -> request at the stand-in, with no added delay (--delay-ms 0): wrk
#                (Benchmarks/latency.lua, fixed rate through its delay()) posts HERALD_BENCH_LATENCY_RATE FCM v1-shaped
#                single-token messages/s to POST /v1/messages and records when it read each 202; the stand-in
#                (--arrivals) logs when each request's body arrived, with its token; the two are joined by token.
#                p50/p99 per run, first and last second left out; the table shows the medians of the runs
#   fanout       one FCM v1 message with "users": HERALD_BENCH_FANOUT_USERS users who have
#                HERALD_BENCH_FANOUT_TOKENS registered tokens between them (written into `tokens` with sqlite3 before
#                Herald starts), at the 30 ms stand-in: ingest = curl's time from request to 202, send = 202 -> the
#                first look at /metrics where every delivery is delivered (and -> the last request at the stand-in),
#                Herald's peak RSS, and checks that the stand-in received every registered token exactly once. The
#                `users` form because the token list of a 1M fan-out does not fit one request (1 MiB body limit;
#                1M 152-byte tokens are ~160 MB), while 50,000 user ids do (~550 KB): one request, one message,
#                and the whole fan-out committed before the 202. Baseline: the sqlite3 shell doing the same
#                expansion set-based (one INSERT ... SELECT from `tokens`, WAL, synchronous=FULL) on a copy of the
#                same registry
# The backlog is generated with the sqlite3 shell in the shape Herald's ingest writes (as Benchmarks/delivery.sh),
# into a database made by `herald migrate` with app "default" paused; `herald resume default` starts the drain.
# The stand-in's self-signed certificate (made by openssl for the run) is trusted through SSL_CERT_FILE, which
# Herald's HTTP client honours. The service account's private key is made for the run too; the stand-in does not
# check the JWT. Nothing leaves loopback.
#
# Usage, from the repository root (root on Debian/Ubuntu installs node, openssl and nghttp2-client if missing):
#   Benchmarks/v1.sh
# Environment (all optional):
#   HERALD_BENCH_FIGURES="rate latency"  which figures to measure, of rate, latency and fanout (~4 min and
#                                    2 GB of disk; add it by name: HERALD_BENCH_FIGURES=fanout)
#   HERALD_BENCH_RUNS=3              rounds of the rate and latency figures; the table shows medians
#   HERALD_BENCH_DELAYS="30 100"     stand-in answer delays (ms) to measure
#   HERALD_BENCH_BACKLOG=200000      single-token messages preloaded per measurement
#   HERALD_BENCH_DURATION=15         seconds of h2load, and at most of Herald's rate window
#   HERALD_BENCH_RAMP=2              seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.2            seconds between two looks at /metrics
#   HERALD_BENCH_H2LOAD_THREADS=1    h2load threads
#   HERALD_BENCH_LATENCY_RATE=1000   messages/s of the latency load
#   HERALD_BENCH_LATENCY_DURATION=20 seconds of the latency load
#   HERALD_BENCH_LATENCY_CONNECTIONS=32  wrk threads for it, one connection each
#   HERALD_BENCH_FANOUT_TOKENS=1000000   registered tokens the fan-out message reaches
#   HERALD_BENCH_FANOUT_USERS=50000  users they belong to (as many tokens each), all named in the message
#   HERALD_BENCH_FANOUT_RUNS=1       fan-out runs (each ~3 min)
#   HERALD_BENCH_FANOUT_DELAY=30     the stand-in's answer delay (ms) for the fan-out
#   HERALD_BENCH_FANOUT_TIMEOUT=600  seconds to wait for the fan-out to be delivered before failing
#   HERALD_BENCH_PERF=0              1: record `perf record -g` of Herald for 10 s at the first delay of run 1 and
#                                    print the top of `perf report` (needs perf)
#   HERALD_BENCH_PERF_ARGS="-g -F 999"  perf record's options (--call-graph dwarf follows stacks through libsqlite3)
#   HERALD_BENCH_INSTRUCTIONS=0      1: count Herald's instructions per send (`perf stat`, 5 s after the ramp) in
#                                    each rate run, a steadier figure than CPU time for comparing two builds
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp where the databases go (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1        use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1              keep the work directory
# Exit status: non-zero on errors (a tool failing, Herald stopping, a delivery not ending `delivered`, requests
# unaccounted for or sent twice, a fan-out token not requested exactly once), never because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings RUNS=3 "DELAYS=30 100" BACKLOG=200000 DURATION=15 RAMP=2 POLL=0.2 H2LOAD_THREADS=1 LATENCY_RATE=1000 \
    LATENCY_DURATION=20 LATENCY_CONNECTIONS=32 FANOUT_TOKENS=1000000 FANOUT_USERS=50000 FANOUT_RUNS=1 FANOUT_DELAY=30 \
    FANOUT_TIMEOUT=600
PERF=${HERALD_BENCH_PERF:-0}
PERF_ARGS=${HERALD_BENCH_PERF_ARGS:--g -F 999}
INSTRUCTIONS=${HERALD_BENCH_INSTRUCTIONS:-0}
FIGURES=${HERALD_BENCH_FIGURES:-rate latency}
CONCURRENCY=1000 # Herald's default for a v1 app; h2load gets the same requests in flight
STREAMS=100
TARGET_RATE_30=10000
TARGET_RATIO_30=0.80
TARGET_RATE_100=8000
TARGET_CPU_US=50
TARGET_P50_MS=5
TARGET_P99_MS=25
TARGET_FANOUT_INGEST_S=10
TARGET_FANOUT_SEND_S=120

for figure in $FIGURES; do
    [[ $figure =~ ^(rate|latency|fanout)$ ]] || fail "unknown figure '$figure' in HERALD_BENCH_FIGURES"
done
wants() { [[ " $FIGURES " == *" $1 "* ]]; }

standin_run

# --- tools -------------------------------------------------------------------------------------------------
tools=(node openssl h2load sqlite3 curl)
wants latency && tools+=(wrk) # the latency figure's load generator
bench_tools "${tools[@]}"
if ((PERF == 1 || INSTRUCTIONS == 1)); then command -v perf >/dev/null || fail "HERALD_BENCH_PERF=1 and HERALD_BENCH_INSTRUCTIONS=1 need perf"; fi
build_herald
make_work v1

# --- the stand-in (Benchmarks/common.sh) --------------------------------------------------------------------
standin_credentials

# --- Herald (common.sh's start_v1_herald) -------------------------------------------------------------------
# Follows /metrics every POLL s: "wall_us delivered connections cpu_ticks vmhwm_kib" per line, until killed.
poller() { # $1 pid, $2 port
    local pid=$1 port=$2 text delivered connections ticks hwm key value
    while kill -0 "$pid" 2>/dev/null; do
        text=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/metrics" 2>/dev/null || true)
        delivered=$(metric "$text" 'herald_deliveries_total{app="default",outcome="delivered"}')
        connections=$(metric "$text" 'herald_fcm_connections{app="default"}')
        read -r ticks < <(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
        hwm=0
        while read -r key value _; do [[ $key == VmHWM: ]] && hwm=$value; done <"/proc/$pid/status"
        echo "${EPOCHREALTIME/./} $delivered $connections $ticks $hwm"
        sleep "$POLL"
    done
}

# One drain of the backlog at the current stand-in. Sets H_RATE H_CPU_US H_CONN H_SESSIONS H_HWM H_WIRE H_COUNTED
# H_DUPLICATES.
measure_herald() { # $1 template database, $2 perf (1: record)
    local db=$WORK/run.db polls=$WORK/polls.txt before deadline
    cp "$1" "$db"
    rm -f "$db-wal" "$db-shm"
    before=$(standin_stats)
    start_v1_herald "$db"
    poller "$HERALD_PID" "$PORT" >"$polls" &
    POLLER_PID=$!
    "$HERALD" resume default --db "$db" >/dev/null 2>&1 || fail "herald resume failed"
    H_INSTRUCTIONS=-
    if (($2 == 1)); then
        sleep "$RAMP"
        perf record $PERF_ARGS -p "$HERALD_PID" -o "$WORK/perf.data" -- sleep 10 >/dev/null 2>&1 || log "perf record failed"
    elif ((INSTRUCTIONS == 1)); then
        sleep "$RAMP"
        count_instructions
    fi
    # Until the backlog is delivered, or HERALD_BENCH_DURATION seconds after the ramp, plus a minute's grace.
    deadline=$(($(date +%s) + RAMP + DURATION + 60))
    while (($(date +%s) < deadline)); do
        kill -0 "$HERALD_PID" 2>/dev/null || fail "herald stopped during the drain: $(tail -3 "$HERALD_LOG")"
        local last
        last=$(tail -1 "$polls" 2>/dev/null | cut -d' ' -f2)
        [[ -n $last ]] && ((last >= BACKLOG)) && break
        sleep 0.5
    done
    stop_paused_drain "$db" default "$before"
    H_SESSIONS=$(stat_growth "$before" "$AFTER" message_sessions)
    check_delivered "$db" queued
    # The rate window: from RAMP s after the first delivery to the 95 % mark, or DURATION s later at most.
    read -r H_RATE H_CPU_US H_CONN H_HWM <<<"$(awk -v ramp="$RAMP" -v duration="$DURATION" -v total="$BACKLOG" -v hz="$HZ" '
        { t[NR] = $1; c[NR] = $2; k[NR] = $3; cpu[NR] = $4; if ($3 > conn) conn = $3; if ($5 > hwm) hwm = $5 }
        END {
            for (i = 1; i <= NR && c[i] == 0; i++) ;
            start = t[i] + ramp * 1e6
            for (a = i; a <= NR && t[a] < start; a++) ;
            for (b = a; b < NR && c[b] < 0.95 * total && t[b] < t[a] + duration * 1e6; b++) ;
            if (a >= NR || b <= a || c[b] <= c[a]) { print "0 0 " conn + 0 " " int(hwm / 1024); exit }
            sends = c[b] - c[a]; secs = (t[b] - t[a]) / 1e6
            printf "%.1f %.1f %d %d\n", sends / secs, (cpu[b] - cpu[a]) / hz * 1e6 / sends, conn, int(hwm / 1024)
        }' "$polls")"
    rm -f "$db" "$db-wal" "$db-shm" "$db.lock"
}

# Herald's instructions (user + kernel, `perf stat`) per delivered send over 5 s of the drain: a steadier figure than
# CPU time on a busy machine, for comparing two builds. Sets H_INSTRUCTIONS (thousands per send).
count_instructions() {
    local before after out=$WORK/perf-stat.out
    before=$(metric "$(curl -fsS --max-time 5 "http://127.0.0.1:$PORT/metrics")" \
        'herald_deliveries_total{app="default",outcome="delivered"}')
    perf stat -x, -e instructions:u,instructions:k -p "$HERALD_PID" -o "$out" -- sleep 5 >/dev/null 2>&1 ||
        fail "perf stat failed"
    after=$(metric "$(curl -fsS --max-time 5 "http://127.0.0.1:$PORT/metrics")" \
        'herald_deliveries_total{app="default",outcome="delivered"}')
    ((after > before)) || fail "nothing was delivered while counting instructions"
    H_INSTRUCTIONS=$(awk -F, -v sends=$((after - before)) '/instructions/ { n += $1 } END { printf "%.1f", n / sends / 1000 }' "$out")
}

# h2load with Herald's requests in flight, the body and Authorization of Herald's first request. Sets L_RATE.
measure_h2load() {
    local stats body auth out=$WORK/h2load.out connections=$(((CONCURRENCY + STREAMS - 1) / STREAMS))
    stats=$(standin_stats)
    body=$(node -e 'const s = JSON.parse(process.argv[1]); process.stdout.write(s.first_body || "")' "$stats")
    auth=$(node -e 'const s = JSON.parse(process.argv[1]); process.stdout.write(s.first_authorization || "")' "$stats")
    [[ -n $body ]] || fail "the stand-in captured no request body from Herald"
    printf '%s' "$body" >"$WORK/body.json"
    h2load -c "$connections" -m "$STREAMS" -t "$H2LOAD_THREADS" -D "$DURATION" --warm-up-time=2 \
        -H "content-type: application/json" -H "authorization: $auth" -d "$WORK/body.json" \
        "https://127.0.0.1:$STANDIN_PORT/v1/projects/standin/messages:send" >"$out" 2>&1 &
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

# --- latency: acknowledged -> request at the stand-in (no added delay) ------------------------------------
# Herald (default settings, a v1 app) on a fresh database; the stand-in answers at once and logs each request's
# arrival with its token; wrk posts LATENCY_RATE v1-shaped single-token messages per second for LATENCY_DURATION
# seconds and logs each 202 with its token. Sets T_P50 T_P99 T_N T_NEG T_MISSING T_SENT.
measure_latency() {
    local db=$WORK/latency.db acks=$WORK/acks arrivals=$WORK/arrivals-latency.txt out=$WORK/wrk-latency.out
    rm -rf "$acks" "$db" "$db-wal" "$db-shm" "$arrivals"
    mkdir -p "$acks"
    start_standin 0 "$arrivals"
    write_service_account "$STANDIN_PORT"
    new_database "$db"
    start_v1_herald "$db"
    wrk -t "$LATENCY_CONNECTIONS" -c "$LATENCY_CONNECTIONS" -d "${LATENCY_DURATION}s" --timeout 10s \
        -s "$ROOT/Benchmarks/latency.lua" "http://127.0.0.1:$PORT" -- "$LATENCY_RATE" "$acks" "$LATENCY_CONNECTIONS" v1 \
        >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$out" >&2
        fail "wrk failed (latency)"
    }
    CHILD_PID=""
    local acked waited=0 bad joined
    acked=$(cat "$acks"/ack-*.txt | wc -l)
    # The last sends: until the stand-in has received as many requests as were acknowledged (20 s at most).
    while (($(stat_of "$(standin_stats)" requests) < acked && waited < 100)); do
        sleep 0.2
        waited=$((waited + 1))
    done
    stop_herald
    stop_pid "$STANDIN_PID" TERM # flushes the arrival log
    STANDIN_PID=""
    grep -q '^BENCH ' "$out" || {
        cat "$out" >&2
        fail "wrk printed no result (latency)"
    }
    bad=$(awk '/^BENCH / { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^(bad|connect|read|write|timeout)=/) { split($i, p, "="); s += p[2] } print s }' "$out")
    ((bad == 0)) || fail "latency load: $bad answers other than 202, or socket errors: $(grep BENCH_BAD_SAMPLE "$out" || true)"
    local twice
    twice=$(cut -d' ' -f1 "$arrivals" | sort | uniq -d | wc -l)
    ((twice == 0)) || fail "latency: $twice tokens arrived at the stand-in more than once"
    sort -k1,1 "$arrivals" >"$WORK/arrivals.sorted"
    cat "$acks"/ack-*.txt | sort -k1,1 >"$WORK/acks.sorted"
    # Both times are wall-clock microseconds on this machine. The first and last second of the load are left out
    # (connections opening, the access token fetched, the schedule starting). Arrival minus acknowledgement, in ms.
    join "$WORK/acks.sorted" "$WORK/arrivals.sorted" | awk '
        { ack[NR] = $2; arr[NR] = $3; if (NR == 1 || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
        END {
            for (i = 1; i <= NR; i++) if (ack[i] >= lo + 1e6 && ack[i] <= hi - 1e6) printf "%.3f\n", (arr[i] - ack[i]) / 1000
            printf "%d %.1f\n", NR, (hi > lo ? NR / ((hi - lo) / 1e6) : 0) > "/dev/stderr"
        }' 2>"$WORK/joined.txt" | sort -g >"$WORK/latencies.txt"
    read -r joined T_SENT <"$WORK/joined.txt"
    T_MISSING=$((acked - joined))
    read -r T_P50 T_P99 T_N T_NEG <<<"$(awk '
        { d[NR] = $1; if ($1 < 0) neg++ }
        END { if (NR == 0) { print "0 0 0 0"; exit }
              printf "%.2f %.2f %d %d\n", d[int(0.50 * (NR - 1)) + 1], d[int(0.99 * (NR - 1)) + 1], NR, neg + 0 }' \
        "$WORK/latencies.txt")"
    ((T_N > 0)) || fail "latency: no acknowledged message was found in the stand-in's arrival log"
    [[ ${HERALD_BENCH_KEEP:-0} == 1 ]] || rm -rf "$acks" "$db" "$db-wal" "$db-shm" "$db.lock" "$arrivals" \
        "$WORK/arrivals.sorted" "$WORK/acks.sorted"
}

# --- fanout: one message to the users of 1,000,000 registered tokens ------------------------------------------
FANOUT_PAYLOAD='"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},"android":{"priority":"high","ttl":"3600s","notification":{"sound":"default"}}'
# A database made by `herald migrate` whose registry holds FANOUT_TOKENS tokens of app "default" (152 bytes, in
# random order, as delivery.sh's), token k belonging to user u(k mod FANOUT_USERS); and the request body naming
# every user.
make_registry() { # $1 path
    local db=$1 now
    new_database "$db"
    now=$(now_ms)
    sqlite3 -bail "$db" >"$WORK/registry.out" 2>&1 <<SQL || {
PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;
BEGIN;
INSERT INTO tokens (token, app, user, created_at, updated_at)
  SELECT printf('%08xf01%010d:APA91b', (value * 2654435761) & 4294967295, value) || '$TOKEN_FILL', 'default',
         printf('u%06d', value % $FANOUT_USERS), $now - $FANOUT_TOKENS + value, $now - $FANOUT_TOKENS + value
  FROM generate_series(1, $FANOUT_TOKENS) ORDER BY 1;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
        cat "$WORK/registry.out" >&2
        fail "generating the token registry failed"
    }
    awk -v n="$FANOUT_USERS" -v payload="$FANOUT_PAYLOAD" 'BEGIN {
        printf "{\"message\":{%s},\"users\":[", payload
        for (i = 0; i < n; i++) printf "%s\"u%06d\"", (i ? "," : ""), i
        printf "]}" }' >"$WORK/fanout-body.json"
    (($(stat -c %s "$WORK/fanout-body.json") <= 1048576)) ||
        fail "the fan-out body is over 1 MiB with $FANOUT_USERS users: fewer users, more tokens each"
}

# Baseline: the sqlite3 shell storing the same message with the same expansion, set-based (one INSERT ... SELECT
# through tokens_by_user), in one transaction, WAL, synchronous=FULL. Sets B_FANOUT_S.
fanout_baseline() { # $1 registry database
    local db=$WORK/fanout-baseline.db sql=$WORK/fanout-baseline.sql now t0 t1 stored
    cp "$1" "$db"
    rm -f "$db-wal" "$db-shm"
    now=$(now_ms)
    {
        echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"
        echo "BEGIN IMMEDIATE;"
        echo "INSERT INTO messages (id, app, payload, target_kind, priority, ttl_seconds, dry_run, created_at, expires_at, format)"
        echo "  VALUES ('01FANOUTBASELINE0000000000', 'default', '{$FANOUT_PAYLOAD}', 'tokens', 'high', 3600, 0, $now, $now + 3600000, 'v1');"
        echo "INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)"
        echo "  SELECT '01FANOUTBASELINE0000000000', 'default', token, 'queued', $now, $now, 0, $now FROM tokens"
        printf "  WHERE app = 'default' AND user IN (SELECT value FROM json_each('%s'));\n" \
            "$(sed 's/.*"users":\(\[.*\]\)}$/\1/' "$WORK/fanout-body.json")"
        echo "COMMIT;"
    } >"$sql"
    t0=${EPOCHREALTIME/./}
    sqlite3 -bail "$db" <"$sql" >/dev/null 2>"$WORK/fanout-baseline.err" || {
        cat "$WORK/fanout-baseline.err" >&2
        fail "the sqlite3 fan-out baseline failed"
    }
    t1=${EPOCHREALTIME/./}
    stored=$(sqlite3 "$db" "SELECT count(*) FROM deliveries")
    ((stored == FANOUT_TOKENS)) || fail "the sqlite3 fan-out baseline stored $stored deliveries, not $FANOUT_TOKENS"
    B_FANOUT_S=$(awk -v us=$((t1 - t0)) 'BEGIN { printf "%.2f", us / 1e6 }')
    rm -f "$db" "$db-wal" "$db-shm" "$sql"
}

# One fan-out: Herald (default settings) on a copy of the registry, the stand-in at FANOUT_DELAY ms logging every
# request's token. Sets F_INGEST_S F_SEND_S F_LAST_S F_HWM F_CPU_US F_CONN.
measure_fanout() { # $1 registry database
    local db=$WORK/fanout.db polls=$WORK/fanout-polls.txt arrivals=$WORK/arrivals-fanout.txt answer t0 t1 code
    local deadline last before after text
    cp "$1" "$db"
    rm -f "$db-wal" "$db-shm" "$arrivals"
    start_standin "$FANOUT_DELAY" "$arrivals"
    write_service_account "$STANDIN_PORT"
    start_v1_herald "$db"
    poller "$HERALD_PID" "$PORT" >"$polls" &
    POLLER_PID=$!
    before=$(standin_stats)
    t0=${EPOCHREALTIME/./}
    answer=$(curl -sS --max-time 600 -H 'content-type: application/json' --data-binary "@$WORK/fanout-body.json" \
        -w '\n%{http_code} %{time_total}' "http://127.0.0.1:$PORT/v1/messages") || fail "the fan-out request failed"
    t1=${EPOCHREALTIME/./}
    read -r code F_INGEST_S <<<"$(tail -1 <<<"$answer")"
    [[ $code == 202 ]] || fail "the fan-out request was answered $code: $(head -1 <<<"$answer")"
    F_INGEST_S=$(awk -v s="$F_INGEST_S" 'BEGIN { printf "%.2f", s }')
    [[ $(head -1 <<<"$answer") == *"\"deliveries\":$FANOUT_TOKENS"* ]] ||
        fail "the fan-out was accepted with other than $FANOUT_TOKENS deliveries: $(head -1 <<<"$answer")"
    deadline=$(($(date +%s) + FANOUT_TIMEOUT))
    while :; do
        kill -0 "$HERALD_PID" 2>/dev/null || fail "herald stopped during the fan-out: $(tail -3 "$HERALD_LOG")"
        last=$(tail -1 "$polls" 2>/dev/null | cut -d' ' -f2)
        [[ -n $last ]] && ((last >= FANOUT_TOKENS)) && break
        (($(date +%s) < deadline)) || fail "the fan-out was not delivered within $FANOUT_TIMEOUT s ($last delivered)"
        sleep 0.5
    done
    text=$(curl -fsS --max-time 5 "http://127.0.0.1:$PORT/metrics")
    after=$(standin_stats)
    stop_drain
    stop_pid "$STANDIN_PID" TERM # flushes the arrival log
    STANDIN_PID=""
    local counted wire duplicates
    counted=$(metric "$text" 'herald_fcm_requests_total{app="default"')
    wire=$(stat_growth "$before" "$after" requests)
    duplicates=$(stat_growth "$before" "$after" duplicates)
    ((wire == counted)) || fail "fan-out: the stand-in received $wire requests, Herald accounted for $counted"
    ((duplicates == 0)) || fail "fan-out: the stand-in received $duplicates bodies twice"
    # Every registered token requested exactly once: the arrival log's tokens, sorted, are the registry's.
    cut -d' ' -f1 "$arrivals" | sort >"$WORK/fanout-requested.txt"
    sqlite3 "$db" "SELECT token FROM tokens WHERE app = 'default' ORDER BY token" >"$WORK/fanout-registered.txt"
    cmp -s "$WORK/fanout-requested.txt" "$WORK/fanout-registered.txt" ||
        fail "fan-out: the tokens requested at the stand-in are not the registered tokens, each once" \
            "($(wc -l <"$WORK/fanout-requested.txt") requested, $(sort -u "$WORK/fanout-requested.txt" | wc -l) distinct," \
            "$(wc -l <"$WORK/fanout-registered.txt") registered)"
    local undelivered
    undelivered=$(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE state <> 'delivered'")
    ((undelivered == 0)) || fail "fan-out: $undelivered deliveries did not end delivered"
    # Send time: the 202 (when curl returned) -> the first look at /metrics that counted every delivery delivered,
    # and -> the last request's arrival at the stand-in.
    read -r F_SEND_S F_HWM F_CPU_US F_CONN <<<"$(awk -v t1="$t1" -v total="$FANOUT_TOKENS" -v hz="$HZ" '
        NR == 1 { cpu0 = $4 }
        { if ($3 > conn) conn = $3; if ($5 > hwm) hwm = $5 }
        !done && $2 >= total { done = $1; cpu1 = $4 }
        END { printf "%.1f %d %.0f %d\n", (done - t1) / 1e6, int(hwm / 1024), (cpu1 - cpu0) / hz * 1e6 / total, conn }' "$polls")"
    F_LAST_S=$(awk -v t1="$t1" '$2 > m { m = $2 } END { printf "%.1f", (m - t1) / 1e6 }' "$arrivals")
    [[ ${HERALD_BENCH_KEEP:-0} == 1 ]] || rm -f "$db" "$db-wal" "$db-shm" "$db.lock" "$arrivals" \
        "$WORK/fanout-requested.txt" "$WORK/fanout-registered.txt"
}

# --- the run -----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $RUNS runs;" \
    "figures $FIGURES; delays $DELAYS ms; backlog $(fmt "$BACKLOG"); default settings (v1 concurrency $CONCURRENCY); --durability full"
log "  node $(node --version); $(h2load --version 2>&1 | head -1); $(openssl version | cut -d' ' -f1-2)"
if wants rate; then
    log "generating the backlog: $(fmt "$BACKLOG") single-token messages"
    make_backlog "$WORK/template.db" "$BACKLOG"
fi

declare -A RATE L CPU CONN SESS HWM
declare -a TP50 TP99 FINGEST FSEND FLAST FHWM FCPU BFANOUT
for ((run = 1; run <= RUNS; run++)); do
    wants rate || break
    first=1
    for delay in $DELAYS; do
        start_standin "$delay"
        write_service_account "$STANDIN_PORT"
        perf_now=0
        if ((PERF == 1 && run == 1 && first == 1)); then perf_now=1; fi
        measure_herald "$WORK/template.db" "$perf_now"
        ((H_DUPLICATES == 0)) || fail "the stand-in received $H_DUPLICATES bodies twice"
        ((H_WIRE == H_COUNTED)) || fail "the stand-in received $H_WIRE requests, Herald accounted for $H_COUNTED"
        measure_h2load
        stop_pid "$STANDIN_PID" TERM
        STANDIN_PID=""
        RATE[$delay]+=" $H_RATE" L[$delay]+=" $L_RATE" CPU[$delay]+=" $H_CPU_US" CONN[$delay]+=" $H_CONN"
        SESS[$delay]+=" $H_SESSIONS" HWM[$delay]+=" $H_HWM"
        log "run $run/$RUNS  ${delay} ms  herald $(fmt "$H_RATE") sends/s | h2load -c $L_CONNECTIONS -m $STREAMS" \
            "$(fmt "$L_RATE") req/s | ratio $(ratio "$H_RATE" "$L_RATE") | connections: herald held $H_CONN at most," \
            "stand-in accepted $H_SESSIONS | CPU $H_CPU_US us/send, $H_INSTRUCTIONS k instructions/send | peak RSS $H_HWM MiB |" \
            "wire $H_WIRE = accounted $H_COUNTED, duplicates $H_DUPLICATES"
        if ((perf_now == 1)) && [[ -f $WORK/perf.data ]]; then
            log "perf: Herald's CPU by thread, by library, and the top symbols (10 s, $WORK/perf.data):"
            for keys in comm dso comm,dso,symbol; do
                perf report -i "$WORK/perf.data" --no-children -g none --sort "$keys" --percent-limit 1 --stdio \
                    2>/dev/null | grep '%' | head -30 >&2 || true
            done
        fi
        first=0
    done
done

if wants latency; then
    for ((run = 1; run <= RUNS; run++)); do
        measure_latency
        TP50+=("$T_P50") TP99+=("$T_P99")
        log "run $run/$RUNS  latency ack -> request at the stand-in (0 ms): p50 $T_P50 ms, p99 $T_P99 ms over" \
            "$(fmt "$T_N") messages ($T_NEG arrived before wrk had read the 202; $T_MISSING acknowledged but not" \
            "found at the stand-in; offered $(fmt "$T_SENT") msg/s) | load average $(cut -d' ' -f1-3 /proc/loadavg)"
    done
fi
if wants fanout; then
    log "generating the registry: $(fmt "$FANOUT_TOKENS") tokens of $(fmt "$FANOUT_USERS") users"
    make_registry "$WORK/registry.db"
    for ((run = 1; run <= FANOUT_RUNS; run++)); do
        fanout_baseline "$WORK/registry.db"
        BFANOUT+=("$B_FANOUT_S")
        log "run $run/$FANOUT_RUNS  fan-out baseline: sqlite3 stores the message and its $(fmt "$FANOUT_TOKENS")" \
            "deliveries set-based in $B_FANOUT_S s"
        measure_fanout "$WORK/registry.db"
        FINGEST+=("$F_INGEST_S") FSEND+=("$F_SEND_S") FLAST+=("$F_LAST_S") FHWM+=("$F_HWM") FCPU+=("$F_CPU_US")
        log "run $run/$FANOUT_RUNS  fan-out $(fmt "$FANOUT_TOKENS") tokens (${FANOUT_DELAY} ms): ingested in" \
            "$F_INGEST_S s, all delivered $F_SEND_S s after the 202 (last request at the stand-in after $F_LAST_S s)" \
            "| connections $F_CONN at most | Herald CPU $F_CPU_US us per token (ingest + send) | peak RSS $F_HWM MiB" \
            "| every token requested exactly once | load average $(cut -d' ' -f1-3 /proc/loadavg)"
    done
fi

# --- the table ---------------------------------------------------------------------------------------------
met() { awk -v a="$1" -v t="$2" -v op="${3:-ge}" 'BEGIN { print ((op == "ge" ? a >= t : a <= t) ? "met" : "NOT met") }'; }
row() { printf '%-44s %12s %20s %7s %18s\n' "$@"; }
bound=$(((CONCURRENCY + STREAMS - 1) / STREAMS + 1))
echo
echo "Herald FCM HTTP v1 ($FIGURES), median of $RUNS runs (fan-out: $FANOUT_RUNS), default settings (concurrency $CONCURRENCY), TLS + HTTP/2 stand-in" \
    "(node, $STREAMS streams/connection) on 127.0.0.1, $(nproc) cores, h2load on the same machine"
row figure value baseline ratio target
for delay in $DELAYS; do
    wants rate || break
    # shellcheck disable=SC2086
    {
        r=$(median ${RATE[$delay]})
        l=$(median ${L[$delay]})
        c=$(median ${CPU[$delay]})
        k=$(median ${CONN[$delay]})
        s=$(median ${SESS[$delay]})
        h=$(median ${HWM[$delay]})
    }
    target="-"
    if ((delay == 30)); then target=">= $(fmt $TARGET_RATE_30) $(met "$r" $TARGET_RATE_30)"; fi
    if ((delay == 100)); then target=">= $(fmt $TARGET_RATE_100) $(met "$r" $TARGET_RATE_100)"; fi
    row "${delay} ms: sends/s" "$(fmt "$r")" "h2load $(fmt "$l")" "$(ratio "$r" "$l")" "$target"
    if ((delay == 30)); then
        row "${delay} ms: ratio to h2load" "$(ratio "$r" "$l")" - - ">= $TARGET_RATIO_30 $(met "$(ratio "$r" "$l")" $TARGET_RATIO_30)"
    fi
    row "${delay} ms: connections held (stand-in saw)" "$k ($s)" - - "<= $bound $(met "$s" $bound le)"
    row "${delay} ms: Herald CPU per send (us)" "$c" - - "<= $TARGET_CPU_US $(met "$c" $TARGET_CPU_US le)"
    row "${delay} ms: Herald peak RSS (MiB)" "$h" - - -
done
if wants latency; then
    p50=$(median "${TP50[@]}")
    p99=$(median "${TP99[@]}")
    row "latency, $(fmt "$LATENCY_RATE") msg/s, 0 ms: p50 (ms)" "$p50" - - "<= $TARGET_P50_MS $(met "$p50" $TARGET_P50_MS le)"
    row "latency, $(fmt "$LATENCY_RATE") msg/s, 0 ms: p99 (ms)" "$p99" - - "<= $TARGET_P99_MS $(met "$p99" $TARGET_P99_MS le)"
fi
if wants fanout; then
    fing=$(median "${FINGEST[@]}")
    fs=$(median "${FSEND[@]}")
    bf=$(median "${BFANOUT[@]}")
    row "fan-out $(fmt "$FANOUT_TOKENS"), ${FANOUT_DELAY} ms: ingested (s)" "$fing" "sqlite3 $bf s" "$(ratio "$fing" "$bf")" \
        "<= $TARGET_FANOUT_INGEST_S $(met "$fing" $TARGET_FANOUT_INGEST_S le)"
    row "fan-out $(fmt "$FANOUT_TOKENS"), ${FANOUT_DELAY} ms: all sent (s)" "$fs" - - \
        "<= $TARGET_FANOUT_SEND_S $(met "$fs" $TARGET_FANOUT_SEND_S le)"
    row "fan-out: Herald peak RSS (MiB)" "$(median "${FHWM[@]}")" - - -
fi
for delay in $DELAYS; do wants rate || break; echo "runs ${delay} ms: herald${RATE[$delay]}; h2load${L[$delay]}; cpu us${CPU[$delay]}; connections${CONN[$delay]}; sessions${SESS[$delay]}"; done
if wants latency; then echo "runs latency: p50 ${TP50[*]} ms; p99 ${TP99[*]} ms"; fi
if wants fanout; then
    echo "runs fan-out: ingested ${FINGEST[*]} s (sqlite3 ${BFANOUT[*]} s); all sent ${FSEND[*]} s (last request" \
        "${FLAST[*]} s); CPU ${FCPU[*]} us/token; peak RSS ${FHWM[*]} MiB"
fi
echo "check: every request at the stand-in was one Herald accounted for, none arrived twice, every finished delivery was delivered"
