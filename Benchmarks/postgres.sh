#!/usr/bin/env bash
# PostgreSQL benchmark (SPEC §14): Herald on PostgreSQL 15 on loopback (scripts/postgres-test-server: fsync and
# synchronous_commit on, in a directory of this run's own), each figure beside a baseline measured in the same run:
#   ingest    single-token messages acknowledged per second: wrk POSTing one legacy-shaped message per request
#             (Benchmarks/ingest.lua "single", random 152-byte tokens) over HERALD_BENCH_CONNECTIONS keep-alive
#             connections to `herald serve --db postgresql://...` (app "default" paused, as Benchmarks/ingest.sh
#             does, so the figure is ingest alone), against pgbench running Benchmarks/postgres-ingest.sql over as
#             many connections (-c N -j 2 -M prepared, as long). "Equivalent" means: the same rows, statements,
#             columns and values Herald writes for one such message (a `messages` row and its queued `deliveries`
#             row) in Herald's own tables (a database of its own made by `herald migrate`: same indexes, checks,
#             foreign key), one message per transaction, each committed with synchronous_commit on; no HTTP, no
#             JSON. Also the same wrk load on `herald serve --db FILE` (SQLite, --durability full), for the
#             "SQLite figures must not get worse" comparison with docs/BENCHMARKS.md.
#   delivery  sends/s of one `herald serve --db postgresql://...` draining a backlog of HERALD_BENCH_BACKLOG
#             single-token FCM v1 messages to the TLS + HTTP/2 stand-in of Benchmarks/v1.sh (answering after
#             HERALD_BENCH_DELAY ms, 100 streams per connection; Herald's default v1 settings), against one
#             `herald serve --db FILE` draining the same backlog on SQLite
#   two       the same backlog drained by two `herald serve` on one PostgreSQL database (two ports, one stand-in):
#             their total sends/s against one instance's, and the bodies that arrived twice at the stand-in; with
#             default settings (each its own window of 1,000 requests in flight), and with --concurrency 500 each,
#             one window shared as deploy/postgres/README.md advises for instances sending for one FCM project
#   batch     messages acknowledged per second by POST /v1/messages/batch (Benchmarks/ingest.lua "batch",
#             HERALD_BENCH_BATCH_SIZE messages a request, the same messages as "ingest") over HERALD_BENCH_POSTERS
#             keep-alive connections to `herald serve --db postgresql://...` (app "default" paused)
#   network   SPEC §14 "On a real network": the Herald figures above (single-message ingest, batch ingest, one
#             instance's drain) each measured twice in the run, direct (loopback) and with Herald's connections to
#             PostgreSQL through scripts/tcp-delay-proxy.js, which holds each direction's bytes
#             HERALD_BENCH_NETWORK_DELAY ms: a database a round trip away. The round trip it really gives (and the
#             direct one) is measured with sequential `SELECT 1` (pgbench, one client, prepared) and printed; the
#             table gives each figure through the proxy as a ratio of the direct one
# The backlog is ingested once per engine through POST /v1/messages/batch (BATCH_SIZE messages a request) with app
# "default" paused, into a template (a PostgreSQL database that each drain gets a copy of with CREATE DATABASE ...
# TEMPLATE; a SQLite file that each drain gets a copy of); `herald resume default` starts a drain. A rate is the
# slope of herald_deliveries_total{outcome="delivered"} (summed over the instances) from HERALD_BENCH_RAMP seconds
# after the first delivery to the 95 % mark, as Benchmarks/v1.sh measures it. Each measurement line also says where
# the CPU went (Herald, the PostgreSQL server with its ended backends, the load tool or the stand-in, other
# processes, idle; in % of one core). Nothing leaves loopback.
#
# Usage, from the repository root, as root on Debian/Ubuntu (installs wrk, nghttp2-client and Herald's own
# dependencies, PostgreSQL and node included, with apt if missing); serialised with other benchmarks:
#   flock /tmp/herald-bench.lock Benchmarks/postgres.sh
# Environment (all optional):
#   HERALD_BENCH_FIGURES="ingest delivery"  which figures to measure ("delivery" measures both drains; "batch" and
#                                    "network" are measured only when named)
#   HERALD_BENCH_POSTERS=8           connections posting batches ("batch", "network")
#   HERALD_BENCH_NETWORK_DELAY=1     ms the delay proxy holds each direction's bytes ("network")
#   HERALD_BENCH_RUNS=3              rounds; the table shows medians
#   HERALD_BENCH_DURATION=20         seconds of each ingest load (wrk and pgbench alike)
#   HERALD_BENCH_CONNECTIONS=64      wrk connections, and pgbench clients
#   HERALD_BENCH_WRK_THREADS=2       wrk threads (pgbench always gets -j 2)
#   HERALD_BENCH_BACKLOG=100000      single-token v1 messages in the backlog (a multiple of HERALD_BENCH_BATCH_SIZE)
#   HERALD_BENCH_BATCH_SIZE=500      messages per batch request when preloading it
#   HERALD_BENCH_DELAY=30            the stand-in's answer delay (ms)
#   HERALD_BENCH_RAMP=2              seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.2            seconds between two looks at /metrics
#   HERALD_BENCH_DRAIN_TIMEOUT=300   seconds a drain may take before the run fails
#   HERALD_BENCH_INGEST_DELIVERING=1 ingest with app "default" sending (v1, to the stand-in) what comes in, instead
#                                    of paused: ingest beside a busy delivery engine
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp where the databases go, PostgreSQL's data directory too (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1        use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1              keep the work directory (logs, poll files; the PostgreSQL server is stopped)
#   HERALD_BENCH_BASE=PATH           another release binary of herald (the commit before a change): "delivery" then
#                                    drains with it and with this build alternated in every run (base, change;
#                                    change, base; ...), one instance on each engine, each binary from a backlog
#                                    template it made itself (their schemas differ), and the table compares the
#                                    two; the two-instance drains are left out
#   HERALD_BENCH_PG_STATS=1          load pg_stat_statements (server restarted once) and, after each PostgreSQL
#                                    drain, print its busiest statements (calls, plans, rows, time) and the drain
#                                    database's commits, rollbacks and deadlocks: where the server's time went
# Exit status: non-zero on errors (a tool failing, Herald stopping, an acknowledged message missing, a delivery not
# ending `delivered`, requests unaccounted for or sent twice), never because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings RUNS=3 DURATION=20 CONNECTIONS=64 WRK_THREADS=2 BACKLOG=100000 BATCH_SIZE=500 DELAY=30 RAMP=2 POLL=0.2 \
    DRAIN_TIMEOUT=300 POSTERS=8
FIGURES=${HERALD_BENCH_FIGURES:-ingest delivery}
INGEST_DELIVERING=${HERALD_BENCH_INGEST_DELIVERING:-0}
NETWORK_DELAY=${HERALD_BENCH_NETWORK_DELAY:-1}
base_binary
STREAMS=100 # the stand-in's streams per connection, as Google's
TARGET_INGEST_RATIO=0.50
TARGET_SENDS=5000
TARGET_TWO_RATIO=1.00
TARGET_NETWORK_RATIO=0.50
TARGET_BATCH=20000
HALF_WINDOW=500 # each of two instances' --concurrency when they share one instance's default window (1000)

[[ $NETWORK_DELAY =~ ^[0-9]*\.?[0-9]+$ ]] || fail "HERALD_BENCH_NETWORK_DELAY must be a number of milliseconds"
((BACKLOG % BATCH_SIZE == 0)) || fail "HERALD_BENCH_BACKLOG must be a multiple of HERALD_BENCH_BATCH_SIZE"
for figure in $FIGURES; do
    [[ $figure =~ ^(ingest|batch|delivery|network)$ ]] || fail "unknown figure '$figure' in HERALD_BENCH_FIGURES"
done
wants() { [[ " $FIGURES " == *" $1 "* ]]; }

# --- processes and files we own, stopped and removed on any exit (Ctrl-C included) ---------------------------
WORK=""
PG_DIR=""
HERALD_PID=""
HERALD_LOG=""
declare -a HERALD_PIDS=() HERALD_PORTS=() HERALD_LOGS=()
STANDIN_PID=""
PROXY_PID=""
POLLER_PID=""
CHILD_PID=""
stop_heralds() { # $1 optional "quiet": every instance started, SIGTERM and wait (common.sh's stop_herald)
    local i
    for i in "${!HERALD_PIDS[@]}"; do
        HERALD_PID=${HERALD_PIDS[$i]} HERALD_LOG=${HERALD_LOGS[$i]}
        stop_herald "${1:-}"
    done
    HERALD_PIDS=() HERALD_PORTS=() HERALD_LOGS=()
}
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop_pid "$CHILD_PID" TERM
    stop_pid "$POLLER_PID" TERM
    stop_heralds quiet || true
    stop_pid "$STANDIN_PID" TERM
    stop_pid "$PROXY_PID" TERM
    if [[ -n $PG_DIR ]]; then HERALD_PG_DIR=$PG_DIR "$ROOT/scripts/postgres-test-server" stop || true; fi
    remove_work
    exit "$status"
}
trap_cleanup

# --- tools -------------------------------------------------------------------------------------------------
bench_tools wrk pgbench psql node openssl sqlite3 curl
build_herald
make_work pg
chmod 755 "$WORK" # the server runs as `postgres` and keeps its directory in here
FSTYPE=$(stat -f -c %T "$WORK")
if [[ $FSTYPE == tmpfs || $FSTYPE == ramfs ]]; then
    log "WARNING: $WORK is on $FSTYPE: fsync costs nothing there; set HERALD_BENCH_TMPDIR to a disk"
fi

# --- PostgreSQL --------------------------------------------------------------------------------------------
PG_DIR=$WORK/postgres
PG_URL=$(HERALD_PG_DIR=$PG_DIR "$ROOT/scripts/postgres-test-server" start) || fail "PostgreSQL did not start"
pg_url() { echo "${PG_URL%/*}/$1"; } # the same server and role, database $1
PG_PORT=${PG_URL##*:}
PG_PORT=${PG_PORT%%/*}
# HERALD_BENCH_PG_STATS=1: pg_stat_statements, through the superuser on the server's unix socket (trust).
PG_STATS=${HERALD_BENCH_PG_STATS:-0}
psql_super() {
    local port=${PG_URL##*:}
    psql -h "$PG_DIR" -p "${port%%/*}" -U postgres -d herald -X -q -v ON_ERROR_STOP=1 "$@"
}
if [[ $PG_STATS == 1 ]]; then
    printf '%s\n' "shared_preload_libraries = 'pg_stat_statements'" "pg_stat_statements.track_planning = on" \
        >>"$PG_DIR/data/postgresql.conf"
    pg_ctl_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl
    if [[ $(id -u) -eq 0 ]]; then pg_as_owner=(runuser -u postgres --); else pg_as_owner=(); fi
    "${pg_as_owner[@]}" "$pg_ctl_bin" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w restart >/dev/null ||
        fail "PostgreSQL did not restart with pg_stat_statements"
    psql_super -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" || fail "no pg_stat_statements"
fi
pg_stats_reset() { if [[ $PG_STATS == 1 ]]; then psql_super -A -t -c "SELECT pg_stat_statements_reset()" >/dev/null; fi; }
pg_stats_report() { # $1 label: the statements of the drain just measured, busiest first
    [[ $PG_STATS == 1 ]] || return 0
    log "  $1: pg_stat_statements (ms: total execution time), and the drain database's transactions"
    psql_super -c "SELECT calls, plans, rows, round(total_exec_time) AS ms,
            left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS statement
        FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12" \
        -c "SELECT xact_commit, xact_rollback, deadlocks FROM pg_stat_database WHERE datname = 'drain'" >&2
}
psql_in() { # $1 database, then psql arguments: quiet, unaligned, stops at the first error
    local db=$1
    shift
    PGOPTIONS='-c client_min_messages=warning' psql "$(pg_url "$db")" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}
# A new, empty database $1 (an earlier one of that name is dropped, its sessions ended), or a copy of $2.
fresh_database() {
    psql_in herald -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1${2:+ TEMPLATE $2}" ||
        fail "could not create database $1"
}
# The server's CPU ticks so far: the postmaster's own and those of its children that have ended (cutime and cstime:
# the postmaster waits for its backends), plus its live children's. A difference between two readings therefore
# counts backends that came and went between them.
postgres_ticks() {
    local postmaster pid
    local -a files=()
    postmaster=$(head -1 "$PG_DIR/data/postmaster.pid")
    for pid in $(cat /proc/"$postmaster"/task/*/children 2>/dev/null); do files+=("/proc/$pid/stat"); done
    { cat "/proc/$postmaster/stat" "${files[@]}" 2>/dev/null || true; } |
        awk '{ r = substr($0, index($0, ") ") + 2); split(r, f, " ")
               t += f[12] + f[13]; if (NR == 1) t += f[14] + f[15] } END { print t + 0 }'
}
proc_ticks() { # pids: their CPU ticks (user + system) summed, 0 for one that has gone; one awk for them all
    local pid
    local -a files=()
    for pid in "$@"; do files+=("/proc/$pid/stat"); done
    { cat "${files[@]}" 2>/dev/null || true; } |
        awk '{ r = substr($0, index($0, ") ") + 2); split(r, f, " "); t += f[12] + f[13] } END { print t + 0 }'
}

# --- the delay proxy ("network") ----------------------------------------------------------------------------
# With VIA_PROXY=1, start_herald points Herald at PostgreSQL through the proxy; everything else (psql, pgbench,
# the checks) stays direct.
VIA_PROXY=0
if wants network; then
    start_node proxy port "the delay proxy" "$ROOT/scripts/tcp-delay-proxy.js" --target "127.0.0.1:$PG_PORT" \
        --delay-ms "$NETWORK_DELAY"
    PROXY_PID=$NODE_PID
    PROXY_PORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$WORK/proxy.out")
fi
through_proxy() { echo "${1/:$PG_PORT\//:$PROXY_PORT/}"; } # $1 a URL of the server: the same through the proxy
printf 'SELECT 1;\n' >"$WORK/select1.sql"
round_trip_ms() { # $1 URL: the mean time of sequential `SELECT 1` (one pgbench client, prepared), in ms
    pgbench -n -M prepared -c 1 -T 3 -f "$WORK/select1.sql" "$1" 2>&1 | awk '/^latency average = / { print $4 }'
}

# --- Herald ------------------------------------------------------------------------------------------------
# Starts one more `herald serve` on $1 (a file or a URL) with the serve flags that follow, on a free loopback port
# (--durability full on SQLite; PostgreSQL's durability is the server's); waits until it answers.
start_herald() {
    local db=$1 log tries waited pid port
    shift
    if [[ $VIA_PROXY == 1 && $db == postgresql://* ]]; then db=$(through_proxy "$db"); fi
    local -a flags=("$@")
    [[ $db == postgresql://* ]] || flags+=(--durability full)
    log=$WORK/herald-${#HERALD_PIDS[@]}.log
    for tries in 1 2 3 4 5; do
        port=$(free_port)
        SSL_CERT_FILE=$WORK/cert.pem "$HERALD" serve --db "$db" --listen "127.0.0.1:$port" "${flags[@]}" 2>"$log" &
        pid=$!
        waited=0
        while ((waited < 600)) && kill -0 "$pid" 2>/dev/null; do
            if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz" 2>/dev/null; then
                HERALD_PIDS+=("$pid") HERALD_PORTS+=("$port") HERALD_LOGS+=("$log")
                return 0
            fi
            sleep 0.1
            waited=$((waited + 1))
        done
        HERALD_PID=$pid HERALD_LOG=$log
        stop_herald quiet
        grep -qi 'in use' "$log" || break
    done
    tail -5 "$log" >&2
    fail "could not start herald serve"
}
# The placeholder FCM settings for ingest alone (app "default" is paused: nothing is claimed or sent), as ingest.sh.
ingest_flags() { echo --fcm-key bench-placeholder --fcm-endpoint "http://127.0.0.1:$(free_port)/fcm/send"; }
# An FCM v1 app at the stand-in, with Herald's default v1 settings.
v1_flags() { echo --fcm-service-account "$WORK/service-account.json" --fcm-endpoint "https://127.0.0.1:$STANDIN_PORT"; }
# Warnings and errors Herald logged, but for the paused app's (a healthy run logs no others); printed, never fatal.
report_herald_logs() { # $1 label
    local file lines
    for file in "${HERALD_LOGS[@]}"; do
        lines=$(grep -E '"level":"(warn|error)"' "$file" | grep -cv '"msg":"app paused"' || true)
        if ((lines > 0)); then
            log "  $1: $(basename "$file") has $lines warn/error lines, the first:"
            grep -E '"level":"(warn|error)"' "$file" | grep -v '"msg":"app paused"' | head -3 >&2
        fi
    done
}

# Runs one load ("$@": wrk or pgbench) to its end, output in $1; sets R_CPU: where the CPU went meanwhile.
run_load() {
    local out=$1 h0 h1 p0 p1 m0 m1 t0 t1
    shift
    h0=$(proc_ticks "${HERALD_PIDS[@]}")
    p0=$(postgres_ticks)
    m0=$(machine_ticks)
    times >"$WORK/times0"
    t0=${EPOCHREALTIME/./}
    "$@" >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$out" >&2
        fail "$1 failed"
    }
    CHILD_PID=""
    t1=${EPOCHREALTIME/./}
    times >"$WORK/times1"
    m1=$(machine_ticks)
    p1=$(postgres_ticks)
    h1=$(proc_ticks "${HERALD_PIDS[@]}")
    R_CPU=$(awk -v h="$((h1 - h0))" -v p="$((p1 - p0))" -v m0="$m0" -v m1="$m1" -v hz="$HZ" -v tool="$1" \
        -v w0="$(children_seconds "$WORK/times0")" -v w1="$(children_seconds "$WORK/times1")" \
        -v secs="$(((t1 - t0) / 1000))" 'BEGIN {
            secs /= 1000; split(m0, a, " "); split(m1, b, " ")
            busy = (b[1] - a[1]) / hz; cap = (b[2] - a[2]) / hz; load = w1 - w0
            rest = busy - h / hz - p / hz - load; if (rest < 0) rest = 0
            printf "cpu%% of one core: herald %.0f postgres %.0f %s %.0f others %.0f idle %.0f",
                100 * h / hz / secs, 100 * p / hz / secs, tool, 100 * load / secs, 100 * rest / secs,
                100 * (cap - busy) / secs }')
}

# --- ingest ------------------------------------------------------------------------------------------------
# After Herald has stopped, looks every acknowledged message id found in the answer bodies up in its database:
# each once in messages with exactly one delivery; at most $4 more messages than acknowledged (committed, their
# answers unread when wrk stopped). $1 --db value, $2 bodies directory, $3 acknowledged.
check_ingest() {
    local db=$1 bodies=$2 acked=$3 unread=$4 counts ids distinct found wrong messages deliveries extra
    cat "$bodies"/*.out | grep -o '"id":"[0-9A-Z]\{26\}"' | cut -c7-32 >"$WORK/acked.txt" || true
    local query="SELECT (SELECT count(*) FROM acked), (SELECT count(DISTINCT id) FROM acked),
        (SELECT count(*) FROM acked WHERE id IN (SELECT id FROM messages)),
        (SELECT count(*) FROM acked a WHERE (SELECT count(*) FROM deliveries d WHERE d.message_id = a.id) <> 1),
        (SELECT count(*) FROM messages), (SELECT count(*) FROM deliveries);"
    if [[ $db == postgresql://* ]]; then
        counts=$(psql "$db" -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 -c "CREATE TEMP TABLE acked (id text)" \
            -c "\\copy acked FROM '$WORK/acked.txt'" -c "CREATE INDEX ON acked (id)" -c "ANALYZE acked" -c "$query")
    else
        counts=$(sqlite3 -bail -separator ' ' "$db" "CREATE TEMP TABLE acked (id TEXT);" \
            ".import --csv $WORK/acked.txt acked" "CREATE INDEX temp.acked_id ON acked (id);" "$query")
    fi || fail "the database check failed"
    read -r ids distinct found wrong messages deliveries <<<"$(tail -1 <<<"$counts")"
    extra=$((messages - acked))
    if ((ids != acked || distinct != acked || found != acked || wrong != 0 || extra < 0 || extra > unread ||
        deliveries != messages)); then
        fail "check: acknowledged $acked; ids in the answers $ids ($distinct distinct), found in messages $found," \
            "$wrong without exactly 1 delivery; in the database $messages messages, $deliveries deliveries"
    fi
    rm -f "$WORK/acked.txt"
}

# wrk's load on a Herald serving $2 (app "default" paused, placeholder FCM settings), then the check: $3 "single"
# (the default) over CONNECTIONS connections, or "batch" (BATCH_SIZE messages a request) over POSTERS. Sets I_RATE
# (messages/s) I_P50 I_P99 (a request's) and R_CPU. $1 label.
measure_herald_ingest() {
    local label=$1 db=$2 mode=${3:-single} bodies=$WORK/bodies bench ok bad us per=1 conns=$CONNECTIONS
    if [[ $mode == batch ]]; then per=$BATCH_SIZE conns=$POSTERS; fi
    rm -rf "$bodies"
    mkdir -p "$bodies"
    if ((INGEST_DELIVERING == 1)); then
        # The engine sends what comes in, to the stand-in, while the load runs: ingest beside delivery.
        "$HERALD" migrate --db "$db" >/dev/null 2>"$WORK/migrate.log" || fail "herald migrate failed"
        # shellcheck disable=SC2046 # a list of flags
        start_herald "$db" $(v1_flags)
    else
        migrate_and_pause "$db"
        # shellcheck disable=SC2046 # a list of flags
        start_herald "$db" $(ingest_flags)
    fi
    run_load "$WORK/wrk.out" wrk -t "$WRK_THREADS" -c "$conns" -d "${DURATION}s" --timeout 30s \
        -s "$ROOT/Benchmarks/ingest.lua" "http://127.0.0.1:${HERALD_PORTS[0]}" -- "$mode" "$bodies" s "$per" random
    kill -0 "${HERALD_PIDS[0]}" 2>/dev/null || fail "herald exited during the $label ingest load"
    bench=$(grep '^BENCH ' "$WORK/wrk.out") || {
        cat "$WORK/wrk.out" >&2
        fail "wrk printed no result ($label)"
    }
    read -r ok bad us I_P50 I_P99 <<<"$(awk '{ for (i = 2; i <= NF; i++) { split($i, p, "="); v[p[1]] = p[2] }
        print v["ok"], v["bad"] + v["connect"] + v["read"] + v["write"] + v["timeout"], v["duration_us"],
              v["p50_us"], v["p99_us"] }' <<<"$bench")"
    ((bad == 0)) || fail "$label: $bad answers other than 202, or socket errors: $(grep BENCH_BAD_SAMPLE "$WORK/wrk.out")"
    I_RATE=$(awk -v n="$((ok * per))" -v us="$us" 'BEGIN { printf "%.1f", n * 1e6 / us }')
    report_herald_logs "$label ingest"
    stop_heralds
    check_ingest "$db" "$bodies" "$((ok * per))" "$((conns * per))"
    rm -rf "$bodies"
}

# pgbench with Benchmarks/postgres-ingest.sql on a fresh database made by `herald migrate`. Sets P_TPS P_LATENCY_MS
# and R_CPU. $1 the payload Herald stored for the same request.
measure_pgbench() {
    local url stored processed
    url=$(pg_url pgbench)
    fresh_database pgbench
    "$HERALD" migrate --db "$url" >/dev/null 2>"$WORK/migrate.log" || {
        cat "$WORK/migrate.log" >&2
        fail "herald migrate (pgbench's database) failed"
    }
    psql_in pgbench -c "INSERT INTO apps (name) VALUES ('default')"
    run_load "$WORK/pgbench.out" pgbench -n -f "$ROOT/Benchmarks/postgres-ingest.sql" -M prepared \
        -c "$CONNECTIONS" -j 2 -T "$DURATION" -D n=0 -D "payload=$1" "$url"
    P_TPS=$(awk '/^tps = .*without initial connection time/ { print $3 }' "$WORK/pgbench.out")
    P_LATENCY_MS=$(awk '/^latency average = / { print $4 }' "$WORK/pgbench.out")
    processed=$(awk -F'[:/ ]+' '/^number of transactions actually processed/ { print $6 }' "$WORK/pgbench.out")
    [[ -n $P_TPS && -n $processed ]] || {
        cat "$WORK/pgbench.out" >&2
        fail "pgbench printed no result"
    }
    grep -q '^number of failed transactions: 0 ' "$WORK/pgbench.out" || {
        cat "$WORK/pgbench.out" >&2
        fail "pgbench transactions failed"
    }
    stored=$(psql_in pgbench -c "SELECT (SELECT count(*) FROM messages) || ' ' || (SELECT count(*) FROM deliveries)")
    [[ $stored == "$processed $processed" ]] ||
        fail "pgbench committed $processed transactions, the database holds '$stored' messages and deliveries"
}

# --- delivery ----------------------------------------------------------------------------------------------
# The backlog in $1 (a file or a URL), through the batch endpoint of a Herald with app "default" paused.
ingest_backlog() {
    local db=$1 stored
    migrate_and_pause "$db"
    # shellcheck disable=SC2046 # a list of flags
    start_herald "$db" $(v1_flags)
    find "$WORK/batches" -name '*.json' | sort | xargs -P 2 -I '{}' curl -sS --max-time 120 -o '{}.out' \
        -H 'content-type: application/json' --data-binary '@{}' "http://127.0.0.1:${HERALD_PORTS[0]}/v1/messages/batch" ||
        fail "a batch request of the backlog failed"
    stored=$(cat "$WORK/batches"/*.out | grep -o '"deliveries":1}' | wc -l)
    ((stored == BACKLOG)) || fail "the backlog: $stored of $BACKLOG messages acknowledged; $(head -c 300 "$(
        grep -L '"deliveries":1}' "$WORK/batches"/*.out | head -1)")"
    rm -f "$WORK/batches"/*.out
    stop_heralds
}

# Every POLL s until killed: "wall_us delivered herald_ticks postgres_ticks standin_ticks busy_ticks total_ticks",
# delivered summed over the instances' /metrics.
poller() {
    local port text
    local -a urls=()
    for port in "${HERALD_PORTS[@]}"; do urls+=("http://127.0.0.1:$port/metrics"); done
    while :; do
        # One curl for every instance's /metrics (metric sums the series over them), so a look costs the same
        # whether one instance or two are measured: the poller's own CPU counts as "others".
        text=$(curl -fsS --max-time 2 "${urls[@]}" 2>/dev/null || true)
        echo "${EPOCHREALTIME/./} $(metric "$text" 'herald_deliveries_total{app="default",outcome="delivered"}')" \
            "$(proc_ticks "${HERALD_PIDS[@]}") $(postgres_ticks) $(proc_ticks "$STANDIN_PID")" \
            "$(machine_ticks | cut -d' ' -f1-2)"
        sleep "$POLL"
    done
}

# One drain of the backlog by $2 instances on a copy of template $1 (a file, or a database name on the server);
# the arguments after them are more `serve` flags for each instance. Sets D_RATE D_CPU D_WIRE D_COUNTED D_DUPLICATES.
measure_drain() {
    local template=$1 instances=$2 db polls=$WORK/polls.txt before after deadline last text port i
    shift 2
    local -a extra=("$@")
    if [[ $template == *.db ]]; then
        db=$WORK/drain.db
        rm -f "$db" "$db-wal" "$db-shm"
        cp "$template" "$db"
    else
        fresh_database drain "$template"
        db=$(pg_url drain)
    fi
    # A stand-in of its own: it counts a body seen twice as a duplicate, and the same message sent in two drains
    # can have the same body (same token, and the same remaining TTL when the two drains lag their ingest alike).
    stop_pid "$STANDIN_PID" TERM
    start_standin "$DELAY"
    write_service_account "$STANDIN_PORT"
    before=$(standin_stats)
    for ((i = 0; i < instances; i++)); do
        # shellcheck disable=SC2046 # a list of flags
        start_herald "$db" $(v1_flags) "${extra[@]}"
    done
    poller >"$polls" &
    POLLER_PID=$!
    "$HERALD" resume default --db "$db" >/dev/null 2>&1 || fail "herald resume failed"
    deadline=$(($(date +%s) + DRAIN_TIMEOUT))
    while :; do
        for i in "${!HERALD_PIDS[@]}"; do
            kill -0 "${HERALD_PIDS[$i]}" 2>/dev/null || fail "herald stopped during the drain: $(tail -3 "${HERALD_LOGS[$i]}")"
        done
        last=$(tail -1 "$polls" 2>/dev/null | cut -d' ' -f2)
        [[ -n $last ]] && ((last >= BACKLOG)) && break
        (($(date +%s) < deadline)) || fail "the backlog was not drained within $DRAIN_TIMEOUT s ($last delivered)"
        sleep 0.5
    done
    sleep 1 # answers to requests counted at the stand-in but not yet at Herald: none should be left, but wait
    D_COUNTED=0
    for port in "${HERALD_PORTS[@]}"; do
        text=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics")
        D_COUNTED=$((D_COUNTED + $(metric "$text" 'herald_fcm_requests_total{app="default"')))
    done
    after=$(standin_stats)
    stop_pid "$POLLER_PID" TERM
    POLLER_PID=""
    report_herald_logs "drain ($instances instance(s))"
    stop_heralds
    D_WIRE=$(stat_growth "$before" "$after" requests)
    D_DUPLICATES=$(stat_growth "$before" "$after" duplicates)
    local states
    if [[ $template == *.db ]]; then
        states=$(sqlite3 "$db" "SELECT state || ':' || count(*) FROM deliveries GROUP BY state" | tr '\n' ' ')
    else
        states=$(psql "$db" -X -q -A -t -c "SELECT state || ':' || count(*) FROM deliveries GROUP BY state" | tr '\n' ' ')
    fi
    [[ $states == "delivered:$BACKLOG " ]] || fail "after the drain the deliveries are $states, not delivered:$BACKLOG"
    # The rate window: from RAMP s after the first delivery to the 95 % mark (v1.sh's), and the CPU in it.
    read -r D_RATE D_CPU <<<"$(awk -v ramp="$RAMP" -v total="$BACKLOG" -v hz="$HZ" '
        { t[NR] = $1; c[NR] = $2; h[NR] = $3; p[NR] = $4; s[NR] = $5; busy[NR] = $6; cap[NR] = $7 }
        END {
            for (i = 1; i <= NR && c[i] == 0; i++) ;
            for (a = i; a <= NR && t[a] < t[i] + ramp * 1e6; a++) ;
            for (b = a; b < NR && c[b] < 0.95 * total; b++) ;
            if (a >= NR || b <= a || c[b] <= c[a]) { print "0 -"; exit }
            secs = (t[b] - t[a]) / 1e6; core = hz * secs / 100
            rest = (busy[b] - busy[a]) - (h[b] - h[a]) - (p[b] - p[a]) - (s[b] - s[a]); if (rest < 0) rest = 0
            printf "%.1f cpu%%_of_one_core:_herald_%.0f_postgres_%.0f_stand-in_%.0f_others_%.0f_idle_%.0f\n",
                (c[b] - c[a]) / secs, (h[b] - h[a]) / core, (p[b] - p[a]) / core, (s[b] - s[a]) / core,
                rest / core, ((cap[b] - cap[a]) - (busy[b] - busy[a])) / core
        }' "$polls")"
    D_CPU=${D_CPU//_/ }
    ((D_WIRE == D_COUNTED)) || fail "the stand-in received $D_WIRE requests, Herald accounted for $D_COUNTED"
    if [[ $template == *.db ]]; then rm -f "$db" "$db-wal" "$db-shm" "$db.lock"; fi
}

# --- the run -----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $RUNS runs;" \
    "figures $FIGURES; $(psql_in herald -c 'SHOW server_version' | cut -d' ' -f1) on 127.0.0.1" \
    "(synchronous_commit $(psql_in herald -c 'SHOW synchronous_commit'), fsync $(psql_in herald -c 'SHOW fsync'));" \
    "work directory $WORK ($FSTYPE)"
log "  ingest: ${DURATION}s, $CONNECTIONS connections (wrk -t $WRK_THREADS; pgbench -c $CONNECTIONS -j 2 -M prepared);" \
    "delivery: backlog $(fmt "$BACKLOG") v1 messages, stand-in ${DELAY} ms, $STREAMS streams/connection"

if wants batch || wants network; then log "  batch: $BATCH_SIZE messages a request, $POSTERS connections"; fi
if wants network; then log "  network: the delay proxy holds each direction's bytes $NETWORK_DELAY ms"; fi

declare -a I_PG I_SQLITE I_PGBENCH B_PG D_SQLITE D_PG D_TWO D_HALVES DUPS
declare -a N_RTT_DIRECT N_RTT_PROXY N_SINGLE_DIRECT N_SINGLE_PROXY N_BATCH_DIRECT N_BATCH_PROXY N_DRAIN_DIRECT \
    N_DRAIN_PROXY
if wants delivery || wants network || ((INGEST_DELIVERING == 1)); then
    standin_credentials
    start_standin "$DELAY"
    write_service_account "$STANDIN_PORT"
fi
with_binary() { # $1 a herald binary, then a command run with it as HERALD
    local saved=$HERALD status=0
    HERALD=$1
    shift
    "$@" || status=$?
    HERALD=$saved
    return "$status"
}
declare -a C_SQLITE_BASE C_SQLITE C_PG_BASE C_PG
# HERALD_BENCH_BASE: one drain on each engine with binary $1 (labelled $2: base or change); appends to
# C_SQLITE[_BASE] and C_PG[_BASE].
compare_drains() {
    local bin=$1 label=$2 suffix=""
    [[ $label == base ]] && suffix=_BASE
    with_binary "$bin" measure_drain "$WORK/backlog${suffix:+-base}.db" 1
    eval "C_SQLITE${suffix}+=(\"\$D_RATE\")"
    log "run $run/$RUNS  drain   $label on SQLite $(fmt "$D_RATE") sends/s | $D_CPU"
    ((D_DUPLICATES == 0)) || fail "the stand-in received $D_DUPLICATES bodies twice ($label, SQLite)"
    with_binary "$bin" measure_drain "backlog${suffix:+_base}" 1
    eval "C_PG${suffix}+=(\"\$D_RATE\")"
    log "run $run/$RUNS  drain   $label on PostgreSQL $(fmt "$D_RATE") sends/s | $D_CPU"
    ((D_DUPLICATES == 0)) || fail "the stand-in received $D_DUPLICATES bodies twice ($label, PostgreSQL)"
}
if wants delivery || wants network; then
    log "ingesting the backlog through the batch endpoint: $(fmt "$BACKLOG") messages into each engine's template"
    make_batches "$BACKLOG" b01
    if wants delivery; then ingest_backlog "$WORK/backlog.db"; fi
    fresh_database backlog
    ingest_backlog "$(pg_url backlog)"
    if wants delivery && [[ -n $BASE_BIN ]]; then
        with_binary "$BASE_BIN" ingest_backlog "$WORK/backlog-base.db"
        fresh_database backlog_base
        with_binary "$BASE_BIN" ingest_backlog "$(pg_url backlog_base)"
    fi
    rm -rf "$WORK/batches"
fi
# One figure of "network", direct then through the proxy: $1 name, then the command that measures it and leaves
# its rate in $2 (a variable's name); appends to N_<name>_DIRECT and N_<name>_PROXY.
direct_and_proxied() {
    local name=$1 rate=$2 via
    shift 2
    for via in 0 1; do
        VIA_PROXY=$via
        "$@"
        VIA_PROXY=0
        if ((via == 0)); then eval "N_${name}_DIRECT+=(\"\${!rate}\")"; else eval "N_${name}_PROXY+=(\"\${!rate}\")"; fi
    done
}
network_ingest() { # $1 single or batch, into a fresh database
    fresh_database "$1"
    measure_herald_ingest "$1 (proxy $VIA_PROXY)" "$(pg_url "$1")" "$1"
}
network_drain() {
    measure_drain backlog 1
    ((D_DUPLICATES == 0)) || fail "the stand-in received $D_DUPLICATES bodies twice (proxy $VIA_PROXY)"
}
for ((run = 1; run <= RUNS; run++)); do
    if wants network; then
        N_RTT_DIRECT+=("$(round_trip_ms "$(pg_url herald)")")
        N_RTT_PROXY+=("$(round_trip_ms "$(through_proxy "$(pg_url herald)")")")
        log "run $run/$RUNS  network round trip (sequential SELECT 1): direct ${N_RTT_DIRECT[-1]} ms, through the" \
            "proxy ${N_RTT_PROXY[-1]} ms"
        direct_and_proxied SINGLE I_RATE network_ingest single
        direct_and_proxied BATCH I_RATE network_ingest batch
        direct_and_proxied DRAIN D_RATE network_drain
        log "run $run/$RUNS  network direct / through the proxy: single-message ingest" \
            "$(fmt "${N_SINGLE_DIRECT[-1]}") / $(fmt "${N_SINGLE_PROXY[-1]}") msg/s, batch ingest" \
            "$(fmt "${N_BATCH_DIRECT[-1]}") / $(fmt "${N_BATCH_PROXY[-1]}") msg/s, delivery" \
            "$(fmt "${N_DRAIN_DIRECT[-1]}") / $(fmt "${N_DRAIN_PROXY[-1]}") sends/s"
    fi
    if wants batch; then
        fresh_database batch
        measure_herald_ingest "PostgreSQL batch" "$(pg_url batch)" batch
        B_PG+=("$I_RATE")
        log "run $run/$RUNS  batch   herald on PostgreSQL $(fmt "$I_RATE") msg/s  request p50 $((I_P50 / 1000)) ms" \
            " p99 $((I_P99 / 1000)) ms | $R_CPU"
    fi
    if wants ingest; then
        fresh_database single
        measure_herald_ingest PostgreSQL "$(pg_url single)"
        I_PG+=("$I_RATE")
        log "run $run/$RUNS  ingest  herald on PostgreSQL $(fmt "$I_RATE") msg/s  p50 $((I_P50 / 1000)) ms" \
            " p99 $((I_P99 / 1000)) ms | $R_CPU"
        payload=$(psql_in single -c "SELECT payload FROM messages LIMIT 1")
        measure_pgbench "$payload"
        I_PGBENCH+=("$P_TPS")
        log "run $run/$RUNS  ingest  pgbench $(fmt "$P_TPS") tps (latency average $P_LATENCY_MS ms) | $R_CPU"
        rm -f "$WORK/single.db" "$WORK/single.db-wal" "$WORK/single.db-shm"
        measure_herald_ingest SQLite "$WORK/single.db"
        I_SQLITE+=("$I_RATE")
        log "run $run/$RUNS  ingest  herald on SQLite $(fmt "$I_RATE") msg/s  p50 $((I_P50 / 1000)) ms" \
            " p99 $((I_P99 / 1000)) ms | $R_CPU"
        rm -f "$WORK/single.db" "$WORK/single.db-wal" "$WORK/single.db-shm" "$WORK/single.db.lock"
    fi
    if wants delivery && [[ -n $BASE_BIN ]]; then
        if ((run % 2)); then
            compare_drains "$BASE_BIN" base
            compare_drains "$HERALD" change
        else
            compare_drains "$HERALD" change
            compare_drains "$BASE_BIN" base
        fi
    elif wants delivery; then
        measure_drain "$WORK/backlog.db" 1
        D_SQLITE+=("$D_RATE")
        log "run $run/$RUNS  drain   1 herald on SQLite $(fmt "$D_RATE") sends/s | $D_CPU | wire $D_WIRE =" \
            "accounted $D_COUNTED, duplicates $D_DUPLICATES"
        ((D_DUPLICATES == 0)) || fail "the stand-in received $D_DUPLICATES bodies twice (SQLite)"
        pg_stats_reset
        measure_drain backlog 1
        pg_stats_report "run $run/$RUNS, 1 instance"
        D_PG+=("$D_RATE")
        log "run $run/$RUNS  drain   1 herald on PostgreSQL $(fmt "$D_RATE") sends/s | $D_CPU | wire $D_WIRE =" \
            "accounted $D_COUNTED, duplicates $D_DUPLICATES"
        DUPS+=("$D_DUPLICATES")
        pg_stats_reset
        measure_drain backlog 2
        pg_stats_report "run $run/$RUNS, 2 instances"
        D_TWO+=("$D_RATE")
        DUPS+=("$D_DUPLICATES")
        log "run $run/$RUNS  drain   2 heralds on one PostgreSQL database $(fmt "$D_RATE") sends/s | $D_CPU |" \
            "wire $D_WIRE = accounted $D_COUNTED, duplicates $D_DUPLICATES"
        pg_stats_reset
        measure_drain backlog 2 --concurrency "$HALF_WINDOW"
        pg_stats_report "run $run/$RUNS, 2 instances, --concurrency $HALF_WINDOW"
        D_HALVES+=("$D_RATE")
        DUPS+=("$D_DUPLICATES")
        log "run $run/$RUNS  drain   2 heralds, --concurrency $HALF_WINDOW each, $(fmt "$D_RATE") sends/s | $D_CPU |" \
            "wire $D_WIRE = accounted $D_COUNTED, duplicates $D_DUPLICATES"
    fi
done

# --- the table ---------------------------------------------------------------------------------------------
met() { awk -v a="$1" -v t="$2" -v op="${3:-ge}" 'BEGIN { print ((op == "ge" ? a >= t : a <= t) ? "met" : "NOT met") }'; }
row() { printf '%-50s %12s %26s %7s %16s\n' "$@"; }
echo
echo "Herald on PostgreSQL, median of $RUNS runs, $(nproc) cores, load tools and stand-in on the same machine"
row figure value baseline ratio target
if wants ingest; then
    pg=$(median "${I_PG[@]}")
    pb=$(median "${I_PGBENCH[@]}")
    sq=$(median "${I_SQLITE[@]}")
    row "ingest, single message, $CONNECTIONS conns$( ((INGEST_DELIVERING == 1)) && echo ", delivering") (msg/s)" "$(fmt "$pg")" "pgbench $(fmt "$pb") tps" \
        "$(ratio "$pg" "$pb")" ">= $TARGET_INGEST_RATIO $(met "$(ratio "$pg" "$pb")" $TARGET_INGEST_RATIO)"
    row "ingest on SQLite, same load (msg/s)" "$(fmt "$sq")" "on PostgreSQL $(fmt "$pg")" "$(ratio "$sq" "$pg")" -
fi
if wants batch; then
    bp=$(median "${B_PG[@]}")
    row "batch ingest, $BATCH_SIZE a request, $POSTERS conns (msg/s)" "$(fmt "$bp")" - - \
        ">= $(fmt $TARGET_BATCH) $(met "$bp" $TARGET_BATCH)"
fi
if wants network; then
    rd=$(median "${N_RTT_DIRECT[@]}")
    rp=$(median "${N_RTT_PROXY[@]}")
    row "round trip to PostgreSQL, through the proxy (ms)" "$rp" "direct $rd" - -
    network_row() { # $1 label, $2 unit, $3 name
        local direct proxied
        direct=$(eval "median \"\${N_${3}_DIRECT[@]}\"")
        proxied=$(eval "median \"\${N_${3}_PROXY[@]}\"")
        row "$1 via ${rp} ms ($2)" "$(fmt "$proxied")" "direct $(fmt "$direct")" "$(ratio "$proxied" "$direct")" \
            ">= $TARGET_NETWORK_RATIO $(met "$(ratio "$proxied" "$direct")" $TARGET_NETWORK_RATIO)"
    }
    network_row "single ingest, $CONNECTIONS conns," msg/s SINGLE
    network_row "batch ingest, $POSTERS conns," msg/s BATCH
    network_row "delivery, 1 instance," sends/s DRAIN
fi
if wants delivery && [[ -n $BASE_BIN ]]; then
    for engine in SQLITE PG; do
        base=$(eval "median \"\${C_${engine}_BASE[@]}\"")
        change=$(eval "median \"\${C_${engine}[@]}\"")
        name=$([[ $engine == PG ]] && echo PostgreSQL || echo SQLite)
        row "delivery on $name, this build vs HERALD_BENCH_BASE (sends/s)" "$(fmt "$change")" "base $(fmt "$base")" \
            "$(ratio "$change" "$base")" -
    done
    echo "runs delivery, base / this build: SQLite ${C_SQLITE_BASE[*]} / ${C_SQLITE[*]};" \
        "PostgreSQL ${C_PG_BASE[*]} / ${C_PG[*]}"
elif wants delivery; then
    sd=$(median "${D_SQLITE[@]}")
    pd=$(median "${D_PG[@]}")
    td=$(median "${D_TWO[@]}")
    hd=$(median "${D_HALVES[@]}")
    dups=0
    for d in "${DUPS[@]}"; do dups=$((dups + d)); done
    row "delivery, 1 instance, ${DELAY} ms stand-in (sends/s)" "$(fmt "$pd")" "SQLite $(fmt "$sd")" \
        "$(ratio "$pd" "$sd")" ">= $(fmt $TARGET_SENDS) $(met "$pd" $TARGET_SENDS)"
    row "delivery, 2 instances, one database (sends/s)" "$(fmt "$td")" "1 instance $(fmt "$pd")" \
        "$(ratio "$td" "$pd")" ">= $TARGET_TWO_RATIO $(met "$(ratio "$td" "$pd")" $TARGET_TWO_RATIO)"
    row "  the same, --concurrency $HALF_WINDOW each (sends/s)" "$(fmt "$hd")" "1 instance $(fmt "$pd")" \
        "$(ratio "$hd" "$pd")" ">= $TARGET_TWO_RATIO $(met "$(ratio "$hd" "$pd")" $TARGET_TWO_RATIO)"
    row "duplicates at the stand-in (all PostgreSQL drains)" "$dups" - - "0 $(met "$dups" 0 le)"
fi
if wants ingest; then
    echo "runs ingest: herald on PostgreSQL ${I_PG[*]}; pgbench ${I_PGBENCH[*]}; herald on SQLite ${I_SQLITE[*]}"
fi
if wants batch; then echo "runs batch: herald on PostgreSQL ${B_PG[*]}"; fi
if wants network; then
    echo "runs network, direct / through the proxy: round trip ${N_RTT_DIRECT[*]} / ${N_RTT_PROXY[*]} ms;" \
        "single ${N_SINGLE_DIRECT[*]} / ${N_SINGLE_PROXY[*]}; batch ${N_BATCH_DIRECT[*]} / ${N_BATCH_PROXY[*]};" \
        "delivery ${N_DRAIN_DIRECT[*]} / ${N_DRAIN_PROXY[*]}"
fi
if wants delivery && [[ -z $BASE_BIN ]]; then
    echo "runs delivery: SQLite ${D_SQLITE[*]}; PostgreSQL 1 instance ${D_PG[*]}; 2 instances ${D_TWO[*]};" \
        "2 instances at --concurrency $HALF_WINDOW ${D_HALVES[*]}"
fi
if wants delivery && [[ -z $BASE_BIN ]] && ((dups > 0)); then fail "Herald on PostgreSQL sent $dups messages twice (see the drain lines)"; fi
echo "check: every acknowledged message was stored with one delivery; every drain ended all delivered, each request" \
    "at the stand-in accounted for by Herald; no message sent twice"
