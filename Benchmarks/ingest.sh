#!/usr/bin/env bash
# Ingest benchmark (SPEC §10): how many messages per second Herald acknowledges, one per request (legacy-shaped,
# and the same message FCM HTTP v1-shaped, SPEC §13) and in batches of 500, against two baselines measured in the
# same run:
#   A  GET /healthz on the same server with the same load tool and connections (the HTTP ceiling);
#   B  the sqlite3 shell inserting the same rows (same schema, same indexes, WAL, synchronous=FULL) in
#      transactions of 500 messages (the storage ceiling).
# Each figure is measured HERALD_BENCH_RUNS times for HERALD_BENCH_DURATION seconds; the table shows medians.
# Every acknowledged message id is then looked up in the database. Each measurement line also says where the
# CPU went (Herald per thread, wrk, other processes, idle) and how many bytes Herald wrote to disk per message.
#
# Usage, from the repository root, as root on Debian/Ubuntu (installs wrk with apt if missing):
#   Benchmarks/ingest.sh
# Environment (all optional):
#   HERALD_BENCH_DURATION=10          seconds per measurement
#   HERALD_BENCH_RUNS=3               rounds; each round starts Herald on a fresh database
#   HERALD_BENCH_CONNECTIONS=64       keep-alive connections for /healthz and single messages
#   HERALD_BENCH_BATCH_CONNECTIONS=16 keep-alive connections for /v1/messages/batch
#   HERALD_BENCH_BATCH_SIZE=500       messages per batch request
#   HERALD_BENCH_WRK_THREADS=2        wrk threads
#   HERALD_BENCH_TOKENS=random        152-byte tokens in random order, as FCM's are; "sequential": in
#                                     increasing order (inserts append to the token index: a best case)
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp  where the databases go (must be a real disk for fsync to mean anything)
#   HERALD_BENCH_SERVE_ARGS="..."     credential flags for `herald serve`, e.g. "--sandbox" (default: a placeholder
#                                     FCM key and a loopback port nobody listens on, so nothing is ever sent off
#                                     this machine)
#   HERALD_BENCH_PAUSE=1              pause app "default" in each fresh database before Herald starts, so the
#                                     delivery engine claims nothing and the figures are ingest alone ("0": the
#                                     engine runs too, and with the default SERVE_ARGS it fails to connect and
#                                     retries)
#   HERALD_BENCH_SKIP_BUILD=1         use the existing .build/release/herald
#   HERALD_BENCH_TENANT=1             single messages with a per-tenant API token (SPEC §22) against the same with
#                                     the admin token (`serve --api-token`), alternated on one serve in every run,
#                                     and the table compares the two; the other figures are left out
#   HERALD_BENCH_BASE=PATH            another release binary of herald (the commit before a change): /healthz and
#                                     single messages are measured for it and for this build alternated in every
#                                     run (base, change, change, base, ...), and the table compares the two; the
#                                     batch and sqlite3 figures are left out (SPEC §20: never slower than the
#                                     release before, measured alternated in one run)
# Exit status: non-zero on errors (a non-202 answer, a socket error, an acknowledged message missing from the
# database, a tool failing), never because a target was missed.
set -euo pipefail

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"

bench_settings DURATION=10 RUNS=3 CONNECTIONS=64 BATCH_CONNECTIONS=16 BATCH_SIZE=500 WRK_THREADS=2
TOKENS=${HERALD_BENCH_TOKENS:-random}
SERVE_ARGS=${HERALD_BENCH_SERVE_ARGS:-}
PAUSE=${HERALD_BENCH_PAUSE:-1}
base_binary
TENANT=${HERALD_BENCH_TENANT:-0}
AUTH=""
TARGET_SINGLE=20000
TARGET_BATCH=150000

[[ $TOKENS == random || $TOKENS == sequential ]] || fail "HERALD_BENCH_TOKENS must be random or sequential"
[[ $PAUSE == 0 || $PAUSE == 1 ]] || fail "HERALD_BENCH_PAUSE must be 0 or 1"
[[ $TENANT == 0 || $TENANT == 1 ]] || fail "HERALD_BENCH_TENANT must be 0 or 1"

# --- processes and files we own, removed on any exit (Ctrl-C included) -----------------------------------
WORK=""
HERALD_PID=""
CHILD_PID=""
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n $CHILD_PID ]] && kill -0 "$CHILD_PID" 2>/dev/null; then
        kill "$CHILD_PID" 2>/dev/null || true
        wait "$CHILD_PID" 2>/dev/null || true
    fi
    stop_herald quiet || true
    if [[ -n $WORK && -d $WORK ]]; then rm -rf -- "$WORK"; fi
    exit "$status"
}
trap_cleanup

# --- tools -------------------------------------------------------------------------------------------------
bench_tools wrk sqlite3 curl
build_herald
LUA=$ROOT/Benchmarks/ingest.lua

make_work bench
FSTYPE=$(stat -f -c %T "$WORK")
if [[ $FSTYPE == tmpfs || $FSTYPE == ramfs ]]; then
    log "WARNING: $WORK is on $FSTYPE: fsync costs nothing there; set HERALD_BENCH_TMPDIR to a disk"
fi

# --- helpers -----------------------------------------------------------------------------------------------
now_ns() { date +%s%N; }

# A loopback port nobody listens on (a connection attempt is refused).

# Herald now delivers what it ingests. Unless told otherwise, it gets a placeholder key and an endpoint on a
# loopback port nobody listens on, and app "default" is paused before it starts: nothing is claimed or sent,
# and nothing could leave this machine if it were.
if [[ -z $SERVE_ARGS ]]; then
    SERVE_ARGS="--fcm-key bench-placeholder --fcm-endpoint http://127.0.0.1:$(free_port)/fcm/send"
fi

HERALD_LOG=""
PORT=""
start_herald() { # $1: database path
    local db=$1 deadline
    if [[ $PAUSE == 1 ]]; then migrate_and_pause "$db"; fi
    for _ in 1 2 3 4 5; do
        PORT=$(free_port)
        HERALD_LOG=$WORK/herald-$(basename "$db" .db).log
        # shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
        "$HERALD" serve $SERVE_ARGS --db "$db" --durability full --listen "127.0.0.1:$PORT" 2>"$HERALD_LOG" &
        HERALD_PID=$!
        deadline=$(($(date +%s) + 60))
        while (($(date +%s) < deadline)); do
            if ! kill -0 "$HERALD_PID" 2>/dev/null; then break; fi
            if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/healthz" 2>/dev/null; then return 0; fi
            sleep 0.1
        done
        if kill -0 "$HERALD_PID" 2>/dev/null; then fail "herald did not answer /healthz within 60 s"; fi
        wait "$HERALD_PID" 2>/dev/null || true
        HERALD_PID=""
        if grep -qi 'in use' "$HERALD_LOG"; then continue; fi
        cat "$HERALD_LOG" >&2
        fail "herald serve exited at start"
    done
    fail "could not start herald on a free port"
}


# CPU ticks of each Herald thread as "tid:name:ticks ..." (user + system). Thread names are whatever the
# kernel has (Herald's threads may all be called "herald"); threads are also numbered in creation order.
herald_ticks() {
    cat /proc/"$1"/task/*/stat 2>/dev/null | awk '
        { s = $0; c = substr(s, index(s, "(") + 1); c = substr(c, 1, index(c, ")") - 1); gsub(/[ :]/, "_", c)
          r = substr(s, index(s, ") ") + 2); split(r, f, " "); printf "%s:%s:%d ", $1, c, f[12] + f[13] }
        END { print "" }'
}
# Runs wrk for one measurement; sets R_OK R_REQUESTS (all answers) R_US R_P50 R_P99 R_BAD (failed answers and socket
# errors) and R_CPU (where the CPU went). $1 mode (healthz|single|batch), $2 connections, $3 token tag,
# $4 directory for the answer bodies ("-": keep none).
run_wrk() {
    local mode=$1 conns=$2 tag=$3 outdir=$4 out=$WORK/wrk.out err=$WORK/wrk.err
    local h0 h1 m0 m1 t0 t1 bench io0 io1
    io0=$(awk '/^write_bytes/ { print $2 }' /proc/"$HERALD_PID"/io 2>/dev/null || echo 0)
    h0=$(herald_ticks "$HERALD_PID")
    m0=$(machine_ticks)
    times >"$WORK/times0"
    t0=$(now_ns)
    wrk -t "$WRK_THREADS" -c "$conns" -d "${DURATION}s" --timeout 30s -s "$LUA" "http://127.0.0.1:$PORT" \
        -- "$mode" "$outdir" "$tag" "$BATCH_SIZE" "$TOKENS" "$AUTH" >"$out" 2>"$err" &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$out" "$err" >&2
        fail "wrk failed ($mode)"
    }
    CHILD_PID=""
    t1=$(now_ns)
    times >"$WORK/times1"
    # wrk exits 0 on Ctrl-C (bash then ignores the SIGINT); Herald, in the same process group, stops.
    kill -0 "$HERALD_PID" 2>/dev/null || fail "herald exited during the $mode measurement (interrupted?)"
    m1=$(machine_ticks)
    h1=$(herald_ticks "$HERALD_PID")
    io1=$(awk '/^write_bytes/ { print $2 }' /proc/"$HERALD_PID"/io 2>/dev/null || echo 0)
    bench=$(grep '^BENCH ' "$out") || {
        cat "$out" "$err" >&2
        fail "wrk printed no result ($mode)"
    }
    if grep -q '^BENCH_BAD_SAMPLE' "$out"; then log "$(grep '^BENCH_BAD_SAMPLE' "$out")"; fi
    local line
    line=$(awk -v bench="$bench" -v h0="$h0" -v h1="$h1" -v m0="$m0" -v m1="$m1" -v hz="$HZ" -v mode="$mode" \
        -v io="$((io1 - io0))" -v batch="$BATCH_SIZE" \
        -v w0="$(children_seconds "$WORK/times0")" -v w1="$(children_seconds "$WORK/times1")" \
        -v wall="$(((t1 - t0) / 1000000))" '
        function kv(s, a,   n, i, p) { n = split(s, p, " "); for (i = 1; i <= n; i++) { split(p[i], q, "="); a[q[1]] = q[2] } }
        BEGIN {
            kv(bench, b); nx = split(h0, x, " "); ny = split(h1, y, " "); split(m0, p, " "); split(m1, q, " ")
            secs = wall / 1000; cap = (q[2] - p[2]) / hz            # CPU-seconds the machine had
            herald = 0; threads = ""; nt = 0
            for (i = 1; i <= nx; i++) { split(x[i], t, ":"); before[t[1] + 0] = t[3] }
            for (i = 1; i <= ny; i++) { split(y[i], t, ":"); tid[++nt] = t[1] + 0; name[t[1] + 0] = t[2]; after[t[1] + 0] = t[3] }
            for (i = 1; i <= nt; i++) for (j = i + 1; j <= nt; j++) if (tid[j] < tid[i]) { k = tid[i]; tid[i] = tid[j]; tid[j] = k }
            for (i = 1; i <= nt; i++) {
                d = (after[tid[i]] - before[tid[i]]) / hz; herald += d
                if (100 * d / secs >= 3) threads = threads sprintf(" %s#%d:%.0f", name[tid[i]], i, 100 * d / secs)
            }
            wrkcpu = w1 - w0; busy = (q[1] - p[1]) / hz
            rest = busy - herald - wrkcpu; if (rest < 0) rest = 0
            bad = b["bad"] + b["connect"] + b["read"] + b["write"] + b["timeout"]
            printf "%d %d %d %d %d %d ", b["ok"], b["requests"], b["duration_us"], b["p50_us"], b["p99_us"], bad
            printf "cpu%% of one core: herald %.0f (threads%s) wrk %.0f others %.0f idle %.0f steal %.0f",
                100 * herald / secs, threads, 100 * wrkcpu / secs, 100 * rest / secs,
                100 * (cap - busy) / secs, 100 * (q[3] - p[3]) / hz / secs
            messages = b["ok"] * (mode == "batch" ? batch : 1)
            if (mode != "healthz" && messages > 0)
                printf " | herald wrote %.0f MB/s to disk, %.1f KiB per message", io / secs / 1e6, io / messages / 1024
            printf "\n"
        }')
    # shellcheck disable=SC2034 # R_REQUESTS is for callers that want it
    read -r R_OK R_REQUESTS R_US R_P50 R_P99 R_BAD R_CPU <<<"$line"
}

rate() { awk -v n="$1" -v us="$2" 'BEGIN { printf "%.1f", n * 1000000 / us }'; }

# The SQLite baseline: $1 messages into a fresh database made by `herald migrate`, in transactions of
# BATCH_SIZE messages, rows generated inside SQLite. $2 payload text. Sets R_US to the elapsed microseconds.
sqlite_baseline() {
    local messages=$1 payload=$2 db=$WORK/baseline.db sql=$WORK/baseline.sql now t0 t1 k first last fill token
    new_database "$db"
    now=$(($(date +%s) * 1000))
    payload=${payload//\'/\'\'}
    fill=$(printf 'x%.0s' $(seq 124))
    if [[ $TOKENS == random ]]; then
        token="printf('%08xq01%010d:APA91b', (value * 2654435761) & 4294967295, value) || '$fill'"
    else
        token="printf('q01%010d%08x:APA91b', value, (value * 2654435761) & 4294967295) || '$fill'"
    fi
    {
        # As Herald's writer connection: WAL, synchronous=FULL, foreign keys on.
        echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"
        for ((k = 0; k * BATCH_SIZE < messages; k++)); do
            first=$((k * BATCH_SIZE + 1))
            last=$(((k + 1) * BATCH_SIZE < messages ? (k + 1) * BATCH_SIZE : messages))
            # Same columns and values as Connection.insertMessage: 26-character increasing ids, the payload
            # Herald stored, 152-byte tokens built like ingest.lua's.
            printf '%s\n' "\
BEGIN IMMEDIATE;
INSERT OR IGNORE INTO apps (name) VALUES ('default');
INSERT INTO messages (id, app, idempotency_key, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, created_at, expires_at)
  SELECT printf('01BENCH%019d', value), 'default', NULL, '$payload', 'tokens', NULL, 'high', 3600, 0, $now, $now + 3600000
  FROM generate_series($first, $last);
INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)
  SELECT printf('01BENCH%019d', value), 'default',
         $token,
         'queued', $now, $now, 0, $now
  FROM generate_series($first, $last);
COMMIT;"
        done
    } >"$sql"
    t0=$(now_ns)
    run_sqlite "$db" "$sql" "the sqlite3 baseline"
    t1=$(now_ns)
    local rows
    rows=$(sqlite3 "$db" "SELECT (SELECT count(*) FROM messages) || ' ' || (SELECT count(*) FROM deliveries)")
    [[ $rows == "$messages $messages" ]] || fail "baseline inserted '$rows' rows, expected $messages of each"
    rm -f "$db" "$db-wal" "$db-shm" "$sql"
    R_US=$(((t1 - t0) / 1000))
}

# --- the run -----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; ${DURATION}s x $RUNS runs;"
log "  single: $CONNECTIONS connections; batch: $BATCH_SIZE messages/request over $BATCH_CONNECTIONS connections;"
log "  $TOKENS tokens; wrk threads $WRK_THREADS; databases in $WORK ($FSTYPE); sqlite $(sqlite3 --version | cut -d' ' -f1)"
log "  herald serve $SERVE_ARGS; app default $([[ $PAUSE == 1 ]] && echo "paused (nothing is claimed or sent)" || echo "not paused")"

# After Herald has stopped (SIGTERM: it finishes, checkpoints and closes), looks every acknowledged message id
# found in the answer bodies up in its database. $1 database, $2 bodies dir, $3 messages acknowledged,
# $4 messages that may have been in flight when wrk stopped (committed, never counted), $5 label.
CHECKS_FAILED=0
check_db() {
    local db=$1 bodies=$2 acked=$3 inflight=$4 label=$5 ids distinct found wrongcount messages deliveries extra verdict=ok
    cat "$bodies"/*.out | grep -o '"id":"[0-9A-Z]\{26\}"' | cut -c7-32 >"$WORK/acked.txt" || true
    sqlite3 -bail "$db" >"$WORK/check.out" 2>&1 <<SQL || {
CREATE TEMP TABLE acked (id TEXT);
.import --csv $WORK/acked.txt acked
CREATE INDEX temp.acked_id ON acked (id);
SELECT (SELECT count(*) FROM acked), (SELECT count(DISTINCT id) FROM acked),
       (SELECT count(*) FROM acked WHERE id IN (SELECT id FROM messages)),
       (SELECT count(*) FROM acked a WHERE (SELECT count(*) FROM deliveries d WHERE d.message_id = a.id) != 1),
       (SELECT count(*) FROM messages), (SELECT count(*) FROM deliveries);
SQL
        cat "$WORK/check.out" >&2
        fail "the database check failed"
    }
    read -r ids distinct found wrongcount messages deliveries <<<"$(tail -1 "$WORK/check.out" | tr '|' ' ')"
    extra=$((messages - acked))
    if ((ids != acked || distinct != acked || found != acked || wrongcount != 0 || extra < 0 || extra > inflight ||
        deliveries != messages)); then
        verdict=FAILED
        CHECKS_FAILED=1
    fi
    log "  check $label: acknowledged $(fmt "$acked"); ids in the answers $(fmt "$ids") ($(fmt "$distinct") distinct);" \
        "found in messages $(fmt "$found"), $wrongcount without exactly 1 delivery; in the database $(fmt "$messages")" \
        "messages, $(fmt "$deliveries") deliveries ($extra committed but unanswered when wrk stopped, at most" \
        "$inflight were in flight) -> $verdict"
    rm -f "$WORK/acked.txt" "$WORK/check.out"
}

# --- HERALD_BENCH_BASE: the base and this build alternated, /healthz and single messages ----------------------
# One round of binary $1 (labelled $2): /healthz and single messages on a fresh database, checked afterwards.
# Appends to HZ_<label> and SM_<label>.
measure_binary() {
    local bin=$1 label=$2 db=$WORK/compare.db bodies=$WORK/bodies-compare saved=$HERALD
    HERALD=$bin
    mkdir -p "$bodies"
    start_herald "$db"
    run_wrk healthz "$CONNECTIONS" h -
    ((R_BAD == 0)) || fail "/healthz ($label): $R_BAD failed requests or socket errors"
    eval "HZ_$label+=(\"\$(rate \"\$R_OK\" \"\$R_US\")\")"
    log "  $label healthz $(fmt "$(rate "$R_OK" "$R_US")") req/s | $R_CPU"
    run_wrk single "$CONNECTIONS" s "$bodies"
    ((R_BAD == 0)) || fail "single ($label): $R_BAD answers other than 202, or socket errors"
    local acked=$R_OK
    eval "SM_$label+=(\"\$(rate \"\$R_OK\" \"\$R_US\")\")"
    log "  $label single  $(fmt "$(rate "$R_OK" "$R_US")") msg/s | $R_CPU"
    stop_herald
    check_db "$db" "$bodies" "$acked" "$CONNECTIONS" "single ($label)"
    rm -rf "$bodies" "$db" "$db-wal" "$db-shm"
    HERALD=$saved
}
if [[ -n $BASE_BIN ]]; then
    log "base: $BASE_BIN; change: $HERALD; alternated, $RUNS rounds of each"
    declare -a HZ_base HZ_change SM_base SM_change
    for ((run = 1; run <= RUNS; run++)); do
        if ((run % 2)); then order=(base change); else order=(change base); fi
        for label in "${order[@]}"; do
            if [[ $label == base ]]; then measure_binary "$BASE_BIN" base; else measure_binary "$HERALD" change; fi
        done
    done
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
    echo
    echo "Herald ingest, base against change alternated, median of $RUNS x ${DURATION}s each, --durability full," \
        "$(nproc) cores"
    printf '%-46s %14s %14s %7s\n' figure base change ratio
    for figure in "GET /healthz, $CONNECTIONS conns (req/s):HZ" "single POST /v1/messages, $CONNECTIONS conns (msg/s):SM"; do
        name=${figure%:*} var=${figure##*:}
        eval "b=\$(median \"\${${var}_base[@]}\") c=\$(median \"\${${var}_change[@]}\")"
        printf '%-46s %14s %14s %7s\n' "$name" "$(fmt "$b")" "$(fmt "$c")" "$(ratio "$c" "$b")"
    done
    echo "runs: healthz base ${HZ_base[*]}; change ${HZ_change[*]}; single base ${SM_base[*]}; change ${SM_change[*]}"
    if ((CHECKS_FAILED)); then fail "an acknowledged message is missing from the database (see the check lines)"; fi
    echo "check: every acknowledged message id was found in the database with one delivery, in every run"
    exit 0
fi

# --- HERALD_BENCH_TENANT: a per-tenant API token against the admin token, alternated on one serve ------------
# Each round: a fresh database with a send token for app default, one serve with --api-token, single messages with
# the admin token and with the per-tenant token (order alternating by round), all checked in the database after.
if [[ $TENANT == 1 ]]; then
    ADMIN_TOKEN=bench-admin-$RANDOM$RANDOM
    SERVE_ARGS="$SERVE_ARGS --api-token $ADMIN_TOKEN"
    declare -a SM_admin SM_tenant
    for ((run = 1; run <= RUNS; run++)); do
        db=$WORK/tenant-$run.db
        bodies=$WORK/bodies-tenant-$run
        mkdir -p "$bodies"
        # The app must be known to the database before a token can name it: `pause` records it.
        { "$HERALD" migrate --db "$db" && "$HERALD" pause default --db "$db" &&
            if [[ $PAUSE == 0 ]]; then "$HERALD" resume default --db "$db"; fi; } >/dev/null 2>"$WORK/migrate.log" ||
            { cat "$WORK/migrate.log" >&2; fail "herald migrate/pause failed"; }
        secret=$("$HERALD" api-tokens create --apps default --role send --name bench --db "$db" --json |
            sed -n 's/.*"secret":"\([^"]*\)".*/\1/p')
        [[ $secret == hrld_* ]] || fail "herald api-tokens create gave no secret"
        start_herald "$db"
        if ((run % 2)); then order=(admin tenant); else order=(tenant admin); fi
        acked=0
        for label in "${order[@]}"; do
            if [[ $label == admin ]]; then AUTH="Bearer $ADMIN_TOKEN"; else AUTH="Bearer $secret"; fi
            run_wrk single "$CONNECTIONS" "${label:0:1}" "$bodies"
            ((R_BAD == 0)) || fail "single ($label token): $R_BAD answers other than 202, or socket errors"
            acked=$((acked + R_OK))
            eval "SM_$label+=(\"\$(rate \"\$R_OK\" \"\$R_US\")\")"
            log "  run $run $label token: single $(fmt "$(rate "$R_OK" "$R_US")") msg/s  p50 $((R_P50 / 1000)) ms" \
                " p99 $((R_P99 / 1000)) ms | $R_CPU"
        done
        AUTH=""
        stop_herald
        check_db "$db" "$bodies" "$acked" $((2 * CONNECTIONS)) "single, both tokens"
        rm -rf "$bodies" "$db" "$db-wal" "$db-shm"
    done
    echo
    echo "Herald ingest, per-tenant API token against the admin token, alternated on one serve, median of $RUNS x" \
        "${DURATION}s each, --durability full, $(nproc) cores"
    a=$(median "${SM_admin[@]}") t=$(median "${SM_tenant[@]}")
    printf '%-46s %14s %14s %7s\n' figure admin per-tenant ratio
    printf '%-46s %14s %14s %7s\n' "single POST /v1/messages, $CONNECTIONS conns (msg/s)" "$(fmt "$a")" "$(fmt "$t")" \
        "$(awk -v a="$t" -v b="$a" 'BEGIN { printf "%.2f", a / b }')"
    echo "runs: admin ${SM_admin[*]}; per-tenant ${SM_tenant[*]}"
    if ((CHECKS_FAILED)); then fail "an acknowledged message is missing from the database (see the check lines)"; fi
    echo "check: every acknowledged message id was found in the database with one delivery, in every run"
    exit 0
fi

declare -a HEALTHZ SINGLE SINGLE_V1 BATCH BASE_MSGS BASE_ROWS SINGLE_P50 SINGLE_P99 BATCH_P50 BATCH_P99
for ((run = 1; run <= RUNS; run++)); do
    # Herald on a fresh database for /healthz and single messages.
    db=$WORK/single-$run.db
    bodies=$WORK/bodies-single-$run
    mkdir -p "$bodies"
    start_herald "$db"
    log "run $run/$RUNS: herald pid $HERALD_PID on 127.0.0.1:$PORT, fresh database"

    run_wrk healthz "$CONNECTIONS" h -
    ((R_BAD == 0)) || fail "/healthz: $R_BAD failed requests or socket errors"
    HEALTHZ+=("$(rate "$R_OK" "$R_US")")
    log "  A  healthz  $(fmt "${HEALTHZ[-1]}") req/s  p50 $((R_P50 / 1000)) ms  p99 $((R_P99 / 1000)) ms  | $R_CPU"

    run_wrk single "$CONNECTIONS" s "$bodies"
    ((R_BAD == 0)) || fail "single: $R_BAD answers other than 202, or socket errors (see BENCH_BAD_SAMPLE above)"
    single_ok=$R_OK
    SINGLE+=("$(rate "$R_OK" "$R_US")")
    SINGLE_P50+=("$R_P50") SINGLE_P99+=("$R_P99")
    log "  single     $(fmt "${SINGLE[-1]}") msg/s  p50 $((R_P50 / 1000)) ms  p99 $((R_P99 / 1000)) ms  | $R_CPU"
    stop_herald
    check_db "$db" "$bodies" "$single_ok" "$CONNECTIONS" single
    rm -rf "$bodies" "$db" "$db-wal" "$db-shm"

    # The same messages FCM HTTP v1-shaped, on a fresh database as the legacy-shaped ones had.
    db=$WORK/single-v1-$run.db
    bodies=$WORK/bodies-single-v1-$run
    mkdir -p "$bodies"
    start_herald "$db"
    run_wrk single-v1 "$CONNECTIONS" v "$bodies"
    ((R_BAD == 0)) || fail "single-v1: $R_BAD answers other than 202, or socket errors (see BENCH_BAD_SAMPLE above)"
    v1_ok=$R_OK
    SINGLE_V1+=("$(rate "$R_OK" "$R_US")")
    log "  single v1  $(fmt "${SINGLE_V1[-1]}") msg/s  p50 $((R_P50 / 1000)) ms  p99 $((R_P99 / 1000)) ms  | $R_CPU"
    stop_herald
    check_db "$db" "$bodies" "$v1_ok" "$CONNECTIONS" single-v1
    rm -rf "$bodies" "$db" "$db-wal" "$db-shm"

    # Herald on a fresh database for batches, as the baseline gets a fresh file.
    db=$WORK/batch-$run.db
    bodies=$WORK/bodies-batch-$run
    mkdir -p "$bodies"
    start_herald "$db"
    log "run $run/$RUNS: herald pid $HERALD_PID on 127.0.0.1:$PORT, fresh database"
    run_wrk batch "$BATCH_CONNECTIONS" b "$bodies"
    ((R_BAD == 0)) || fail "batch: $R_BAD answers not 200 with $BATCH_SIZE stored results, or socket errors"
    batch_ok=$((R_OK * BATCH_SIZE))
    BATCH+=("$(rate "$batch_ok" "$R_US")")
    BATCH_P50+=("$R_P50") BATCH_P99+=("$R_P99")
    log "  batch      $(fmt "${BATCH[-1]}") msg/s ($(fmt "$R_OK") requests)  p50 $((R_P50 / 1000)) ms" \
        " p99 $((R_P99 / 1000)) ms  | $R_CPU"
    stop_herald
    check_db "$db" "$bodies" "$batch_ok" $((BATCH_CONNECTIONS * BATCH_SIZE)) batch
    payload=$(sqlite3 "$db" "SELECT payload FROM messages LIMIT 1")
    rm -rf "$bodies" "$db" "$db-wal" "$db-shm"

    # Baseline B: as many messages as this run's batch figure acknowledged (at least 100,000).
    base_n=$((batch_ok > 100000 ? batch_ok : 100000))
    sqlite_baseline "$base_n" "$payload"
    BASE_MSGS+=("$(rate "$base_n" "$R_US")")
    BASE_ROWS+=("$(rate $((2 * base_n)) "$R_US")")
    log "  B  sqlite3  $(fmt "${BASE_MSGS[-1]}") msg/s = $(fmt "${BASE_ROWS[-1]}") rows/s" \
        "($(fmt "$base_n") messages in $((R_US / 1000)) ms)"
done

# --- the table ---------------------------------------------------------------------------------------------
A=$(median "${HEALTHZ[@]}")
S=$(median "${SINGLE[@]}")
S1=$(median "${SINGLE_V1[@]}")
B=$(median "${BATCH[@]}")
BM=$(median "${BASE_MSGS[@]}")
BR=$(median "${BASE_ROWS[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
met() { awk -v a="$1" -v t="$2" 'BEGIN { print (a >= t ? "met" : "NOT met") }'; }
echo
echo "Herald ingest, median of $RUNS x ${DURATION}s, --durability full, $TOKENS tokens, $(nproc) cores, load tool on the same machine"
printf '%-46s %14s %24s %7s %22s\n' figure value baseline ratio target
printf '%-46s %14s %24s %7s %22s\n' "A: GET /healthz, $CONNECTIONS conns (req/s)" "$(fmt "$A")" "-" "-" "-"
printf '%-46s %14s %24s %7s %22s\n' "B: sqlite3, txn of $BATCH_SIZE msgs (rows/s)" "$(fmt "$BR")" "-" "-" "-"
printf '%-46s %14s %24s %7s %22s\n' "B: sqlite3, txn of $BATCH_SIZE msgs (msg/s)" "$(fmt "$BM")" "-" "-" "-"
printf '%-46s %14s %24s %7s %22s\n' "single POST /v1/messages, $CONNECTIONS conns (msg/s)" "$(fmt "$S")" \
    "A $(fmt "$A") req/s" "$(ratio "$S" "$A")" ">= $(fmt $TARGET_SINGLE) $(met "$S" $TARGET_SINGLE)"
printf '%-46s %14s %24s %7s %22s\n' "single, FCM v1-shaped, $CONNECTIONS conns (msg/s)" "$(fmt "$S1")" \
    "legacy $(fmt "$S") msg/s" "$(ratio "$S1" "$S")" ">= 0.90 $(met "$(ratio "$S1" "$S")" 0.90)"
printf '%-46s %14s %24s %7s %22s\n' "batch of $BATCH_SIZE, $BATCH_CONNECTIONS conns (msg/s)" "$(fmt "$B")" \
    "B $(fmt "$BM") msg/s" "$(ratio "$B" "$BM")" ">= $(fmt $TARGET_BATCH) $(met "$B" $TARGET_BATCH)"
echo "latency (median of runs): single p50 $(($(median "${SINGLE_P50[@]}" | cut -d. -f1) / 1000)) ms" \
    "p99 $(($(median "${SINGLE_P99[@]}" | cut -d. -f1) / 1000)) ms; batch request p50 $(($(median "${BATCH_P50[@]}" | cut -d. -f1) / 1000)) ms" \
    "p99 $(($(median "${BATCH_P99[@]}" | cut -d. -f1) / 1000)) ms"
echo "runs: healthz ${HEALTHZ[*]}; single ${SINGLE[*]}; single v1 ${SINGLE_V1[*]}; batch ${BATCH[*]}; sqlite3 msg/s ${BASE_MSGS[*]}"
if ((CHECKS_FAILED)); then fail "an acknowledged message is missing from the database, or the counts disagree (see the check lines)"; fi
echo "check: every acknowledged message id was found in the database with one delivery, in every run"
