#!/usr/bin/env bash
# Delivery benchmark (SPEC §10): how fast Herald claims, sends, classifies and reconciles, against a fast local FCM
# stand-in (nginx on 127.0.0.1 answering every POST with a fixed FCM success body), with baselines measured in the
# same run:
#   single    single-token messages: deliveries that reached `delivered` per second, from a preloaded backlog,
#             against W1: wrk POSTing the same request (body and headers as Herald sends them) to the same nginx
#             location over as many connections as Herald's --concurrency (the bare-HTTP ceiling);
#   multicast messages of 1000 tokens: token deliveries per second, against B: the sqlite3 shell doing the same claim
#             and writing each message's 1000 outcomes with one set-based UPDATE (the storage ceiling of the schema),
#             and W1000: wrk POSTing a 1000-token request to the location that answers with 1000 results
#             (requests/s x 1000, the HTTP ceiling);
#   latency   a paced load of single-token messages through POST /v1/messages: acknowledgement at the client ->
#             arrival of the request at the stand-in (`herald fcm-sim`, whose GET /stats lists each request's
#             arrival in Unix ms and its tokens), p50/p99;
#   backlog   the single-token rate with 10,000 deliveries queued and with 5,000,000 queued, their ratio, and
#             Herald's peak RSS (VmHWM) in each.
# Backlogs are generated with the sqlite3 shell in the shape Herald's ingest writes (migrations/, Connection+Messages:
# one message row and one queued delivery per token, the payload stored without its target, 152-byte tokens in
# random order), into a database made by `herald migrate` with app "default" paused. Each measurement copies the
# template, starts `herald serve` on it, runs `herald resume default` and follows
# herald_deliveries_total{outcome="delivered"} on GET /metrics every HERALD_BENCH_POLL seconds. A rate is the median
# of one-second windows after a ramp-up of HERALD_BENCH_RAMP seconds, stopping before the last 5 % of a backlog
# (the 10,000 backlog lasts under a second, so its rate is the slope from 10 % to 90 % delivered, interpolated
# between samples, median of HERALD_BENCH_SMALL_REPEAT drains). Each measurement line also says where the CPU went
# (Herald per thread: #2 is the writer, "sender" the libcurl thread, "gcd" dispatch threads such as the delivery
# queue; nginx; other processes; idle) and how many bytes Herald wrote to disk per delivery.
#
# Nothing leaves loopback: Herald's only endpoint is 127.0.0.1, nginx and fcm-sim listen on 127.0.0.1 only.
#
# Usage, from the repository root, as root on Debian/Ubuntu (installs wrk and nginx-light with apt if missing):
#   Benchmarks/delivery.sh
# Environment (all optional):
#   HERALD_BENCH_RUNS=3                rounds of every figure; the table shows medians
#   HERALD_BENCH_DURATION=15           seconds of steady state per rate figure (and per wrk baseline)
#   HERALD_BENCH_RAMP=2                seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.1              seconds between two looks at /metrics
#   HERALD_BENCH_CONCURRENCY=64        Herald's --concurrency, and wrk's connections for the baselines
#   HERALD_BENCH_WRK_THREADS=2         wrk threads for the baselines
#   HERALD_BENCH_SINGLE_BACKLOG=400000 single-token messages preloaded for the "single" figure
#   HERALD_BENCH_MULTICAST_MESSAGES=3000  1000-token messages preloaded for the "multicast" figure
#   HERALD_BENCH_SMALL_BACKLOG=10000   HERALD_BENCH_LARGE_BACKLOG=5000000   the two backlogs compared
#   HERALD_BENCH_SMALL_REPEAT=3        drains of the small backlog per run (it lasts under a second); their median
#   HERALD_BENCH_LATENCY_RATE=1000     messages/s of the latency load
#   HERALD_BENCH_LATENCY_DURATION=20   seconds of the latency load
#   HERALD_BENCH_LATENCY_CONNECTIONS=32  wrk threads for it, one connection each
#   HERALD_BENCH_NGINX_WORKERS=1       nginx worker processes
#   HERALD_BENCH_FIGURES="single multicast latency backlog"   which figures to measure
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp   where the databases go (a real disk; the 5M template takes ~3.5 GB, and a
#                                      copy of it as much again)
#   HERALD_BENCH_SKIP_BUILD=1          use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1                keep the work directory (databases, logs, poll files) for a look afterwards
# Exit status: non-zero on errors (a tool failing, Herald stopping, a delivery not ending `delivered`, a baseline
# request failing), never because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=300

bench_settings RUNS=3 DURATION=15 RAMP=2 POLL=0.1 CONCURRENCY=64 WRK_THREADS=2 SINGLE_BACKLOG=400000 \
    MULTICAST_MESSAGES=3000 SMALL_BACKLOG=10000 SMALL_REPEAT=3 LARGE_BACKLOG=5000000 LATENCY_RATE=1000 \
    LATENCY_DURATION=20 LATENCY_CONNECTIONS=32 NGINX_WORKERS=1
FIGURES=${HERALD_BENCH_FIGURES:-single multicast latency backlog}
TARGET_SINGLE=10000
TARGET_SINGLE_RATIO=0.50
TARGET_MULTICAST=150000
TARGET_P50_MS=5
TARGET_P99_MS=25
TARGET_BACKLOG_RATIO=0.80
TARGET_RSS_MIB=200
MULTICAST_SIZE=1000 # tokens per multicast message: the stand-in's second location answers exactly this many

for figure in $FIGURES; do
    [[ $figure =~ ^(single|multicast|latency|backlog)$ ]] || fail "unknown figure '$figure' in HERALD_BENCH_FIGURES"
done
wants() { [[ " $FIGURES " == *" $1 "* ]]; }

# --- processes and files we own, removed on any exit (Ctrl-C included) -----------------------------------
WORK=""
HERALD_PID=""
NGINX_PID=""
SIM_PID=""
POLLER_PID=""
FETCHER_PID=""
CHILD_PID=""
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop_pid "$CHILD_PID" TERM
    stop_pid "$POLLER_PID" TERM
    stop_pid "$FETCHER_PID" TERM
    stop_herald quiet || true
    stop_pid "$SIM_PID" TERM
    stop_pid "$NGINX_PID" QUIT
    remove_work
    exit "$status"
}
trap_cleanup

# --- tools -------------------------------------------------------------------------------------------------
bench_tools wrk sqlite3 curl sort
if ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then install_package nginx-light; fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
build_herald
LUA=$ROOT/Benchmarks/delivery.lua
LATENCY_LUA=$ROOT/Benchmarks/latency.lua

make_work delivery
FSTYPE=$(stat -f -c %T "$WORK")
if [[ $FSTYPE == tmpfs || $FSTYPE == ramfs ]]; then
    log "WARNING: $WORK is on $FSTYPE: fsync costs nothing there; set HERALD_BENCH_TMPDIR to a disk"
fi

# --- helpers -----------------------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { r = (b > 0 ? a / b : 0); printf (r >= 0.1 ? "%.2f" : "%.4f"), r }'; }

# A loopback port nobody listens on.

wait_http() { # $1 url, $2 pid that must stay alive, $3 what
    local deadline=$(($(date +%s) + 60))
    while (($(date +%s) < deadline)); do
        kill -0 "$2" 2>/dev/null || return 1
        if curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    fail "$3 did not answer $1 within 60 s"
}

# --- the FCM stand-in: nginx on 127.0.0.1 ----------------------------------------------------------------
# /fcm/send answers a single-token request; /fcm/send1000 answers with 1000 results (Herald's classifier needs one
# result per token). Both read and discard the request body, keep connections alive without limit, log nothing.
PAYLOAD_MEMBERS='"priority":"high","data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute.","sound":"default"}'
SINGLE_RESPONSE='{"multicast_id":1,"success":1,"failure":0,"canonical_ids":0,"results":[{"message_id":"0:1"}]}'
NGINX_PORT=""
start_nginx() {
    local dir=$WORK/nginx
    mkdir -p "$dir/tmp"
    # nginx started by root runs its workers as nobody: let them reach the results file (and nothing else here).
    chmod 711 "$WORK"
    chmod 755 "$dir"
    awk -v n="$MULTICAST_SIZE" 'BEGIN {
        printf "{\"multicast_id\":1,\"success\":%d,\"failure\":0,\"canonical_ids\":0,\"results\":[", n
        for (i = 0; i < n; i++) printf "%s{\"message_id\":\"0:%d\"}", (i ? "," : ""), i
        printf "]}" }' >"$dir/results$MULTICAST_SIZE.json"
    chmod 644 "$dir/results$MULTICAST_SIZE.json"
    # The bodies Herald sends (LegacyProvider: the target, the stored members but time_to_live, the remaining TTL),
    # for the wrk baselines.
    printf '{"to":"%08xq01%010d:APA91b%s",%s,"time_to_live":86000}' 2654435761 1 "$TOKEN_FILL" "$PAYLOAD_MEMBERS" \
        >"$WORK/body-single.json"
    awk -v n="$MULTICAST_SIZE" -v fill="$TOKEN_FILL" -v members="$PAYLOAD_MEMBERS" 'BEGIN {
        printf "{\"registration_ids\":["
        for (i = 1; i <= n; i++) printf "%s\"%08xq01%010d:APA91b%s\"", (i > 1 ? "," : ""), (i * 2654435761) % 4294967296, i, fill
        printf "],%s,\"time_to_live\":86000}", members }' >"$WORK/body-multicast.json"
    for _ in 1 2 3 4 5; do
        NGINX_PORT=$(free_port)
        cat >"$dir/nginx.conf" <<EOF
worker_processes $NGINX_WORKERS;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_timeout 300s;
    keepalive_requests 1000000000;
    client_max_body_size 64m;
    client_body_temp_path $dir/tmp;
    proxy_temp_path $dir/tmp;
    fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp;
    scgi_temp_path $dir/tmp;
    default_type application/json;
    server {
        listen 127.0.0.1:$NGINX_PORT backlog=4096;
        location = /fcm/send { return 200 '$SINGLE_RESPONSE'; }
        # A static file cannot answer a POST (405); error_page turns that into the file with status 200.
        location = /fcm/send$MULTICAST_SIZE { error_page 405 =200 /results$MULTICAST_SIZE.json; return 405; }
        location = /results$MULTICAST_SIZE.json { internal; root $dir; }
        location / { return 404; }
    }
}
EOF
        "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" 2>>"$dir/start.log" &
        NGINX_PID=$!
        if wait_http "http://127.0.0.1:$NGINX_PORT/fcm/send" "$NGINX_PID" nginx; then break; fi
        wait "$NGINX_PID" 2>/dev/null || true
        NGINX_PID=""
        grep -qi 'in use' "$dir/error.log" "$dir/start.log" 2>/dev/null && continue
        cat "$dir/start.log" "$dir/error.log" >&2 2>/dev/null || true
        fail "nginx did not start"
    done
    [[ -n $NGINX_PID ]] || fail "could not start nginx on a free port"
    local got
    got=$(curl -fsS -X POST --data-binary "@$WORK/body-multicast.json" "http://127.0.0.1:$NGINX_PORT/fcm/send$MULTICAST_SIZE" |
        grep -o '"message_id"' | wc -l)
    ((got == MULTICAST_SIZE)) || fail "nginx answered /fcm/send$MULTICAST_SIZE with $got results, not $MULTICAST_SIZE"
}
# CPU ticks of every nginx process (master and workers) into NGINX_TICKS, with builtins only.
nginx_ticks() {
    local pid line rest
    local -a kids=() f
    NGINX_TICKS=0
    read -ra kids <"/proc/$NGINX_PID/task/$NGINX_PID/children" 2>/dev/null || true
    for pid in "$NGINX_PID" "${kids[@]}"; do
        read -r line <"/proc/$pid/stat" 2>/dev/null || continue
        rest=${line##*) }
        read -ra f <<<"$rest"
        NGINX_TICKS=$((NGINX_TICKS + f[11] + f[12]))
    done
}

# --- Herald --------------------------------------------------------------------------------------------------
HERALD_LOG=""
PORT=""
start_herald() { # $1 database, $2 FCM endpoint URL (on 127.0.0.1 only)
    local db=$1 endpoint=$2
    [[ $endpoint == http://127.0.0.1:* ]] || fail "refusing an FCM endpoint off loopback: $endpoint"
    for _ in 1 2 3 4 5; do
        PORT=$(free_port)
        HERALD_LOG=$WORK/herald-$(basename "$db" .db).log
        "$HERALD" serve --db "$db" --durability full --listen "127.0.0.1:$PORT" --concurrency "$CONCURRENCY" \
            --fcm-key bench --fcm-endpoint "$endpoint" 2>"$HERALD_LOG" &
        HERALD_PID=$!
        if wait_http "http://127.0.0.1:$PORT/healthz" "$HERALD_PID" herald; then return 0; fi
        wait "$HERALD_PID" 2>/dev/null || true
        HERALD_PID=""
        if grep -qi 'in use' "$HERALD_LOG"; then continue; fi
        cat "$HERALD_LOG" >&2
        fail "herald serve exited at start"
    done
    fail "could not start herald on a free port"
}

# --- backlogs (common.sh's make_backlog), counted and timed -------------------------------------------------
preload() { # $1 path, $2 messages, $3 tokens per message
    local t0 counts
    t0=$(now_ms)
    make_backlog "$@"
    counts=$(sqlite3 "$1" "SELECT (SELECT count(*) FROM messages) || ' '
        || (SELECT count(*) FROM deliveries WHERE state = 'queued')")
    [[ $counts == "$2 $(($2 * $3))" ]] || fail "backlog has '$counts' rows, expected $2 $(($2 * $3))"
    log "  generated $(fmt "$2") messages x $3 tokens in $((($(now_ms) - t0) / 1000)) s: $(du -m "$1" | cut -f1) MB"
}

# --- following a drain -------------------------------------------------------------------------------------
# Writes one line per look, POLL seconds apart, until killed:
#   wall_us delivered vmhwm_kib machine_busy machine_total machine_steal nginx_ticks write_bytes tid:comm:ticks ...
# It uses only bash builtins (/dev/tcp, read) so that looking costs next to nothing.
poller() { # $1 herald pid, $2 herald port
    local pid=$1 port=$2 line count hwm key value rest threads task comm t written
    local -a f g
    exec 4<>"$WORK/poll.fifo" # a pipe nobody writes to: `read -t` on it is a sleep without a fork
    while kill -0 "$pid" 2>/dev/null; do
        t=${EPOCHREALTIME/./}
        count=0
        if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
            printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
            while IFS= read -r line <&3; do
                if [[ $line == 'herald_deliveries_total{app="default",outcome="delivered"} '* ]]; then
                    count=${line##* }
                    count=${count%$'\r'}
                fi
            done
            exec 3<&-
        fi
        hwm=0
        while read -r key value _; do
            if [[ $key == VmHWM: ]]; then hwm=$value; fi
        done <"/proc/$pid/status"
        written=0
        while read -r key value; do
            if [[ $key == write_bytes: ]]; then written=$value; fi
        done <"/proc/$pid/io"
        read -ra f </proc/stat # the first line: cpu user nice system idle iowait irq softirq steal ...
        threads=""
        for task in /proc/"$pid"/task/*; do
            read -r line <"$task/stat" 2>/dev/null || continue
            comm=${line#*(}
            comm=${comm%%) *}
            rest=${line##*) }
            read -ra g <<<"$rest"
            threads+=" ${task##*/}:${comm// /_}:$((g[11] + g[12]))"
        done
        nginx_ticks
        printf '%s %s %s %d %d %d %s %s%s\n' "$t" "$count" "$hwm" \
            $((f[1] + f[2] + f[3] + f[6] + f[7] + f[8])) $((f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7] + f[8])) \
            "${f[8]}" "$NGINX_TICKS" "$written" "$threads"
        read -r -t "$POLL" -u 4 _ || true
    done
}

# Reads a poll file; prints "rate windows mean hwm_mib cpu-description".
# $1 file, $2 mode (steady: median of 1 s windows; span: 10 %..90 % slope), $3 deliveries expected in all.
analyse() {
    awk -v mode="$2" -v total="$3" -v ramp="$RAMP" -v duration="$DURATION" -v hz="$HZ" '
        function cpu(a, b,   secs, i, j, n, x, y, t, name, d, herald, desc, busy, others, ng) {
            secs = (ts[b] - ts[a]) / 1e6
            n = split(th[a], x, " "); for (i = 1; i <= n; i++) { split(x[i], t, ":"); before[t[1]] = t[3] }
            n = split(th[b], y, " "); herald = 0; desc = ""
            # In creation order (tids grow), whatever order the kernel listed them in: #2 is the writer.
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (y[j] + 0 < y[i] + 0) { t[0] = y[i]; y[i] = y[j]; y[j] = t[0] }
            for (i = 1; i <= n; i++) {
                split(y[i], t, ":"); d = (t[3] - before[t[1]]) / hz; herald += d
                name = t[2]
                if (i == 2) name = "writer"
                else if (name ~ /^herald-(herald-)?send/) name = "sender"
                else if (name ~ /qos/) name = "gcd"
                if (100 * d / secs >= 3) desc = desc sprintf(" %s#%d:%.0f", name, i, 100 * d / secs)
            }
            busy = (mb[b] - mb[a]) / hz; ng = (nx[b] - nx[a]) / hz
            others = busy - herald - ng; if (others < 0) others = 0
            return sprintf("cpu%% of one core: herald %.0f (threads%s) nginx %.0f others %.0f idle %.0f steal %.0f | herald wrote %.1f KiB per delivery",
                100 * herald / secs, desc, 100 * ng / secs, 100 * others / secs,
                100 * ((mt[b] - mt[a]) / hz - busy) / secs, 100 * (ms[b] - ms[a]) / hz / secs,
                (c[b] > c[a] ? (wb[b] - wb[a]) / (c[b] - c[a]) / 1024 : 0))
        }
        function crossing(level,   i) { # interpolated time (us) at which the count reached level
            for (i = 2; i <= n; i++) if (c[i] >= level && c[i - 1] < level)
                return ts[i - 1] + (ts[i] - ts[i - 1]) * (level - c[i - 1]) / (c[i] - c[i - 1])
            return -1
        }
        {
            n++; ts[n] = $1; c[n] = $2; hwm[n] = $3; mb[n] = $4; mt[n] = $5; ms[n] = $6; nx[n] = $7; wb[n] = $8
            th[n] = ""; for (i = 9; i <= NF; i++) th[n] = th[n] " " $i
            if ($3 > peak) peak = $3
        }
        END {
            if (n < 3) { print "0 0 0 0 too few samples"; exit }
            if (mode == "span") {
                t1 = crossing(0.1 * total); t2 = crossing(0.9 * total)
                if (t1 < 0 || t2 <= t1) { print "0 0 0 " peak / 1024 " the drain was not seen (poll more often?)"; exit }
                for (a = 1; a < n && ts[a + 1] <= t1; a++) {}
                for (b = a; b < n && ts[b] < t2; b++) {}
                rate = 0.8 * total / ((t2 - t1) / 1e6)
                printf "%.1f 1 %.1f %.1f %s\n", rate, rate, peak / 1024, cpu(a, b)
                exit
            }
            for (f = 1; f <= n && c[f] == 0; f++) {}
            if (f > n) { print "0 0 0 " peak / 1024 " nothing was delivered"; exit }
            for (a = f; a <= n && ts[a] < ts[f] + ramp * 1e6; a++) {}
            k = 0; i = a; last = a
            while (i < n) {
                for (j = i + 1; j <= n && ts[j] < ts[i] + 1e6; j++) {}
                if (j > n || ts[j] > ts[a] + (duration + 0.5) * 1e6 || c[j] > 0.95 * total) break
                rates[++k] = (c[j] - c[i]) / ((ts[j] - ts[i]) / 1e6); last = j; i = j
            }
            if (k == 0) { print "0 0 0 " peak / 1024 " no whole second after the ramp (backlog too small?)"; exit }
            for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (rates[j] < rates[i]) { x = rates[i]; rates[i] = rates[j]; rates[j] = x }
            median = (k % 2) ? rates[(k + 1) / 2] : (rates[k / 2] + rates[k / 2 + 1]) / 2
            printf "%.1f %d %.1f %.1f %s (slowest second %.0f, fastest %.0f)\n", median, k,
                (c[last] - c[a]) / ((ts[last] - ts[a]) / 1e6), peak / 1024, cpu(a, last), rates[1], rates[k]
        }' "$1"
}

# Copies the template, starts Herald on it, resumes the app and follows the drain until `stop_at` deliveries, or
# for ramp + duration seconds after the first delivery (steady mode). Sets M_RATE M_WINDOWS M_MEAN M_HWM M_CPU.
# $1 label, $2 template, $3 endpoint path, $4 deliveries in the backlog, $5 mode (steady|span)
measure_drain() {
    local label=$1 template=$2 path=$3 total=$4 mode=$5 db=$WORK/run.db polls=$WORK/poll-$1.txt
    local started first_ms last deadline delivered line
    rm -f "$db" "$db-wal" "$db-shm"
    cp "$template" "$db"
    start_herald "$db" "http://127.0.0.1:$NGINX_PORT$path"
    poller "$HERALD_PID" "$PORT" >"$polls" &
    POLLER_PID=$!
    "$HERALD" resume default --db "$db" >/dev/null || fail "herald resume failed"
    started=$(now_ms)
    first_ms=0
    deadline=$((started + 60000))
    while :; do
        sleep 0.2
        kill -0 "$HERALD_PID" 2>/dev/null || {
            tail -5 "$HERALD_LOG" >&2
            fail "herald exited during the $label measurement"
        }
        line=$(tail -1 "$polls" 2>/dev/null) || true
        delivered=$(awk '{ print $2 + 0 }' <<<"$line")
        delivered=${delivered:-0}
        if ((first_ms == 0 && delivered > 0)); then
            first_ms=$(now_ms)
            deadline=$((first_ms + (RAMP + DURATION + 2) * 1000))
        fi
        ((delivered >= total)) && break
        if [[ $mode == steady ]] && ((first_ms > 0)) && ((delivered * 100 >= total * 96)); then break; fi
        if (($(now_ms) > deadline)); then
            ((first_ms > 0)) || fail "$label: nothing was delivered within 60 s of herald resume (see $HERALD_LOG)"
            break
        fi
    done
    sleep 0.3 # one more look after the end
    stop_pid "$POLLER_PID" TERM
    POLLER_PID=""
    read -r M_RATE M_WINDOWS M_MEAN M_HWM M_CPU <<<"$(analyse "$polls" "$mode" "$total")"
    # Whatever was claimed must have ended delivered: the stand-in answers success to everything.
    local failed
    failed=$(curl -fsS "http://127.0.0.1:$PORT/metrics" | awk '/^herald_deliveries_total/ && !/outcome="delivered"/ && !/outcome="released"/ { s += $NF } END { print s + 0 }')
    stop_herald
    ((failed == 0)) || fail "$label: $failed deliveries ended other than delivered (see $HERALD_LOG)"
    if [[ $mode == span ]]; then
        delivered=$(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE state = 'delivered'")
        ((delivered == total)) || fail "$label: $delivered of $total deliveries are delivered after the drain"
    fi
    ((${M_RATE%.*} > 0)) || fail "$label: no rate ($M_CPU)"
    rm -f "$db" "$db-wal" "$db-shm" "$db.lock"
}

# (mawk: printf %d stops at 2^31; times are printed with %.0f.)
# Baseline B for multicast: the sqlite3 shell doing the storage work of a 1000-token message without any HTTP, on a
# copy of the multicast backlog: per message, Herald's claim (the same UPDATE ... RETURNING in BEGIN IMMEDIATE, and
# the message looked up) committed, then the 1000 outcomes written `delivered` by ONE set-based UPDATE ... RETURNING
# committed. WAL, synchronous=FULL, SQLite's default cache and autocheckpoint, as Herald's writer has them.
# (Herald writes outcomes row by row, one prepared UPDATE per delivery; a shell script that did the same would
# mostly measure the shell parsing 1000 statements, so the baseline shows what the schema allows, not Herald's way.)
# Sets B_RATE (token deliveries/s).
sqlite_multicast_baseline() { # $1 messages to process (from the start of the multicast backlog)
    local messages=$1 db=$WORK/baseline.db sql=$WORK/baseline.sql now t0 t1 delivered
    rm -f "$db" "$db-wal" "$db-shm"
    cp "$WORK/multicast.db" "$db"
    now=$(now_ms)
    awk -v m="$messages" -v per="$MULTICAST_SIZE" -v now="$now" 'BEGIN {
        print "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"
        print "UPDATE apps SET paused = 0 WHERE name = '\''default'\'';"
        for (k = 1; k <= m; k++) {
            print "BEGIN IMMEDIATE;"
            print "SELECT name, paused, pause_reason, gate_until FROM apps WHERE name = '\''default'\'';"
            printf "UPDATE deliveries SET state = '\''inflight'\'', lease_owner = '\''bench'\'', lease_expires_at = %.0f, updated_at = %.0f\n", now + 120000, now
            printf "WHERE id IN (SELECT id FROM deliveries WHERE app = '\''default'\'' AND priority_rank = 0 AND state = '\''queued'\''\n"
            printf "  AND next_attempt_at <= %.0f ORDER BY next_attempt_at LIMIT %d) RETURNING id, message_id, token, attempts;\n", now, per
            printf "SELECT id, app, payload, target_kind, ttl_seconds, dry_run, expires_at, collapse_key FROM messages WHERE id = printf('\''01BENCH%%019d'\'', %d);\n", k
            print "COMMIT;"
            print "BEGIN IMMEDIATE;"
            printf "UPDATE deliveries SET state = '\''delivered'\'', reason = NULL, attempts = attempts + 1, lease_owner = NULL,\n"
            printf "  lease_expires_at = NULL, fcm_message_id = '\''0:'\'' || id, canonical_token = NULL, last_status = 200, updated_at = %.0f\n", now
            printf "WHERE message_id = printf('\''01BENCH%%019d'\'', %d) AND state = '\''inflight'\'' AND lease_owner = '\''bench'\''\n", k
            print "RETURNING app, token, message_id;"
            print "COMMIT;"
        } }' >"$sql"
    t0=${EPOCHREALTIME/./}
    sqlite3 -bail "$db" <"$sql" >/dev/null 2>"$WORK/baseline.err" &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$WORK/baseline.err" >&2
        fail "sqlite3 baseline failed"
    }
    CHILD_PID=""
    t1=${EPOCHREALTIME/./}
    delivered=$(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE state = 'delivered'")
    ((delivered == messages * MULTICAST_SIZE)) || fail "sqlite3 baseline delivered $delivered, expected $((messages * MULTICAST_SIZE))"
    B_RATE=$(awk -v n="$delivered" -v us=$((t1 - t0)) 'BEGIN { printf "%.1f", n * 1e6 / us }')
    rm -f "$db" "$db-wal" "$db-shm" "$sql"
}

# wrk POSTing a body to nginx with Herald's headers. Sets W_RATE (answers/s).
run_wrk_fcm() { # $1 body file, $2 path
    local out=$WORK/wrk.out bench ok us bad n0 n1 m0 m1 t0 t1
    nginx_ticks
    n0=$NGINX_TICKS
    read -r m0 <<<"$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat)"
    t0=$(now_ms)
    wrk -t "$WRK_THREADS" -c "$CONCURRENCY" -d "${DURATION}s" --timeout 30s -s "$LUA" "http://127.0.0.1:$NGINX_PORT" \
        -- "$1" "$2" bench >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$out" >&2
        fail "wrk failed ($2)"
    }
    CHILD_PID=""
    t1=$(now_ms)
    nginx_ticks
    n1=$NGINX_TICKS
    read -r m1 <<<"$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat)"
    bench=$(grep '^BENCH ' "$out") || {
        cat "$out" >&2
        fail "wrk printed no result ($2)"
    }
    [[ $bench =~ \ ok=([0-9]+) ]] && ok=${BASH_REMATCH[1]}
    [[ $bench =~ \ duration_us=([0-9]+) ]] && us=${BASH_REMATCH[1]}
    bad=$(awk '{ s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^(bad|connect|read|write|timeout)=/) { split($i, p, "="); s += p[2] } print s }' <<<"$bench")
    ((bad == 0)) || {
        cat "$out" >&2
        fail "wrk: $bad failed requests or socket errors against nginx $2"
    }
    W_RATE=$(awk -v n="$ok" -v us="$us" 'BEGIN { printf "%.1f", n * 1e6 / us }')
    W_CPU=$(awk -v n0="$n0" -v n1="$n1" -v m0="$m0" -v m1="$m1" -v hz="$HZ" -v ms=$((t1 - t0)) \
        'BEGIN { s = ms / 1000; printf "cpu%% of one core: nginx %.0f, everything %.0f (wrk and others)", 100 * (n1 - n0) / hz / s, 100 * (m1 - m0) / hz / s }')
}

# --- latency -----------------------------------------------------------------------------------------------
# Herald on a fresh database sending to `herald fcm-sim`; wrk sends LATENCY_RATE single-token messages per second
# for LATENCY_DURATION seconds and writes each acknowledged token with its acknowledgement time; the simulator's
# request log (the last 10,000 requests, fetched every 2 s) gives each token's arrival. Sets L_P50 L_P99 L_N L_NEG.
measure_latency() { # $1 run
    local run=$1 sim_port db=$WORK/latency-$1.db acks=$WORK/acks-$1 stats=$WORK/stats-$1 out=$WORK/wrk-lat.out
    mkdir -p "$acks" "$stats"
    for _ in 1 2 3 4 5; do
        sim_port=$(free_port)
        "$HERALD" fcm-sim --listen "127.0.0.1:$sim_port" 2>"$WORK/fcm-sim.log" &
        SIM_PID=$!
        if wait_http "http://127.0.0.1:$sim_port/stats?requests=0" "$SIM_PID" fcm-sim; then break; fi
        wait "$SIM_PID" 2>/dev/null || true
        SIM_PID=""
    done
    [[ -n $SIM_PID ]] || fail "could not start herald fcm-sim"
    start_herald "$db" "http://127.0.0.1:$sim_port/fcm/send"
    (
        k=0
        while kill -0 "$SIM_PID" 2>/dev/null; do # ends with the simulator, whatever happens to this script
            k=$((k + 1))
            curl -fsS --max-time 5 "http://127.0.0.1:$sim_port/stats?requests=5000" -o "$stats/$k.json" 2>/dev/null || true
            sleep 2
        done
    ) &
    FETCHER_PID=$!
    local h0 h1 m0 m1
    h0=$(awk '{ print $14 + $15 }' "/proc/$HERALD_PID/stat")
    wrk -t "$LATENCY_CONNECTIONS" -c "$LATENCY_CONNECTIONS" -d "${LATENCY_DURATION}s" --timeout 10s -s "$LATENCY_LUA" \
        "http://127.0.0.1:$PORT" -- "$LATENCY_RATE" "$acks" "$LATENCY_CONNECTIONS" >"$out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$out" >&2
        fail "wrk failed (latency)"
    }
    CHILD_PID=""
    h1=$(awk '{ print $14 + $15 }' "/proc/$HERALD_PID/stat")
    local acked
    acked=$(cat "$acks"/ack-*.txt | wc -l)
    # Wait for the last sends, then one more look at the simulator.
    local waited=0
    while (($(curl -fsS "http://127.0.0.1:$sim_port/stats?requests=0" | sed 's/.*"tokens_received":\([0-9]*\).*/\1/') < acked)); do
        sleep 0.2
        waited=$((waited + 1))
        ((waited < 100)) || break
    done
    stop_pid "$FETCHER_PID" TERM
    FETCHER_PID=""
    curl -fsS "http://127.0.0.1:$sim_port/stats?requests=5000" -o "$stats/final.json" || fail "fcm-sim /stats failed"
    stop_herald
    stop_pid "$SIM_PID" TERM
    SIM_PID=""
    grep -q '^BENCH ' "$out" || {
        cat "$out" >&2
        fail "wrk printed no result (latency)"
    }
    local bad
    bad=$(awk '/^BENCH / { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^(bad|connect|read|write|timeout)=/) { split($i, p, "="); s += p[2] } print s }' "$out")
    ((bad == 0)) || fail "latency load: $bad answers other than 202, or socket errors: $(grep BENCH_BAD_SAMPLE "$out" || true)"
    # Each request of the log is {"at":MS,"tokens":["TOKEN"],...}; a token may appear in several fetches.
    cat "$stats"/*.json | grep -o '"at":[0-9]*,"tokens":\["[^"]*"' | sed 's/"at":\([0-9]*\),"tokens":\["\([^"]*\)"/\2 \1/' |
        sort -u -k1,1 >"$WORK/arrivals.txt"
    cat "$acks"/ack-*.txt | sort -k1,1 >"$WORK/acks.txt"
    # The first and last second of the load are left out (connections opening, the schedule starting).
    # The simulator gives the arrival in whole milliseconds (truncated): it is taken as the middle of that
    # millisecond, so each figure is within +-0.5 ms. Arrival minus acknowledgement (us), in ms, sorted.
    join "$WORK/acks.txt" "$WORK/arrivals.txt" | awk '
        { ack[NR] = $2; arr[NR] = $3 * 1000 + 500; if (NR == 1 || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
        END {
            for (i = 1; i <= NR; i++) if (ack[i] >= lo + 1e6 && ack[i] <= hi - 1e6) printf "%.3f\n", (arr[i] - ack[i]) / 1000
            printf "%d %.1f\n", NR, (hi > lo ? NR / ((hi - lo) / 1e6) : 0) > "/dev/stderr"
        }' 2>"$WORK/joined.txt" | sort -g >"$WORK/latencies.txt"
    local joined
    read -r joined L_SENT <"$WORK/joined.txt"
    L_MISSING=$((acked - joined))
    read -r L_P50 L_P99 L_N L_NEG <<<"$(awk '
        { d[NR] = $1; if ($1 < 0) neg++ }
        END { if (NR == 0) { print "0 0 0 0"; exit }
              printf "%.2f %.2f %d %d\n", d[int(0.50 * (NR - 1)) + 1], d[int(0.99 * (NR - 1)) + 1], NR, neg + 0 }' \
        "$WORK/latencies.txt")"
    L_CPU=$(awk -v a="$h0" -v b="$h1" -v hz="$HZ" -v s="$LATENCY_DURATION" 'BEGIN { printf "herald %.0f %% of one core", 100 * (b - a) / hz / s }')
    [[ ${HERALD_BENCH_KEEP:-0} == 1 ]] || rm -rf "$acks" "$stats" "$db" "$db-wal" "$db-shm" "$db.lock"
    ((L_N > 0)) || fail "latency: no acknowledged message was found in the simulator's request log"
}

# --- the run -----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $RUNS runs;" \
    "${DURATION}s steady state after ${RAMP}s ramp; --concurrency $CONCURRENCY; --durability full"
log "  figures: $FIGURES; databases in $WORK ($FSTYPE); sqlite $(sqlite3 --version | cut -d' ' -f1);" \
    "$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2); $("$NGINX" -v 2>&1 | cut -d' ' -f3) ($NGINX_WORKERS worker)"
mkfifo "$WORK/poll.fifo"
start_nginx
log "nginx pid $NGINX_PID on 127.0.0.1:$NGINX_PORT (/fcm/send, /fcm/send$MULTICAST_SIZE)"

declare -a W1 S SR W1000 BMC MC LP50 LP99 SMALL LARGE SMALL_HWM LARGE_HWM
if wants single; then
    log "backlog for single: $(fmt "$SINGLE_BACKLOG") single-token messages"
    preload "$WORK/single.db" "$SINGLE_BACKLOG" 1
fi
if wants multicast; then
    log "backlog for multicast: $(fmt "$MULTICAST_MESSAGES") messages of $MULTICAST_SIZE tokens"
    preload "$WORK/multicast.db" "$MULTICAST_MESSAGES" "$MULTICAST_SIZE"
fi
if wants backlog; then
    log "backlogs: $(fmt "$SMALL_BACKLOG") and $(fmt "$LARGE_BACKLOG") single-token messages"
    preload "$WORK/small.db" "$SMALL_BACKLOG" 1
    preload "$WORK/large.db" "$LARGE_BACKLOG" 1
fi

for ((run = 1; run <= RUNS; run++)); do
    if wants single; then
        run_wrk_fcm "$WORK/body-single.json" /fcm/send
        W1+=("$W_RATE")
        log "run $run/$RUNS  W1 wrk -> nginx /fcm/send, $CONCURRENCY conns: $(fmt "$W_RATE") req/s | $W_CPU"
        measure_drain single "$WORK/single.db" /fcm/send "$SINGLE_BACKLOG" steady
        S+=("$M_RATE")
        SR+=("$(ratio "$M_RATE" "$W_RATE")")
        log "run $run/$RUNS  single     $(fmt "$M_RATE") deliveries/s (median of $M_WINDOWS s; mean $(fmt "$M_MEAN"))" \
            "ratio to W1 ${SR[-1]}; peak RSS ${M_HWM} MiB | $M_CPU"
    fi
    if wants multicast; then
        run_wrk_fcm "$WORK/body-multicast.json" "/fcm/send$MULTICAST_SIZE"
        W1000+=("$(awk -v r="$W_RATE" -v n="$MULTICAST_SIZE" 'BEGIN { printf "%.1f", r * n }')")
        log "run $run/$RUNS  W1000 wrk -> nginx /fcm/send$MULTICAST_SIZE, $CONCURRENCY conns: $(fmt "$W_RATE") req/s" \
            "= $(fmt "${W1000[-1]}") tokens/s | $W_CPU"
        sqlite_multicast_baseline $((MULTICAST_MESSAGES < 500 ? MULTICAST_MESSAGES : 500))
        BMC+=("$B_RATE")
        log "run $run/$RUNS  B sqlite3: claim + one set-based UPDATE per 1000-token message: $(fmt "$B_RATE") token deliveries/s"
        measure_drain multicast "$WORK/multicast.db" "/fcm/send$MULTICAST_SIZE" $((MULTICAST_MESSAGES * MULTICAST_SIZE)) steady
        MC+=("$M_RATE")
        log "run $run/$RUNS  multicast  $(fmt "$M_RATE") token deliveries/s (median of $M_WINDOWS s; mean" \
            "$(fmt "$M_MEAN")); peak RSS ${M_HWM} MiB | $M_CPU"
    fi
    if wants latency; then
        measure_latency "$run"
        LP50+=("$L_P50") LP99+=("$L_P99")
        log "run $run/$RUNS  latency    ack -> arrival at fcm-sim: p50 $L_P50 ms, p99 $L_P99 ms over $(fmt "$L_N") messages" \
            "($L_NEG arrived before wrk had read the 202; $L_MISSING acknowledged but not found in the simulator's log;" \
            "offered $(fmt "$L_SENT") msg/s; $L_CPU)"
    fi
    if wants backlog; then
        # The small backlog drains in well under a second: each run takes the median of SMALL_REPEAT drains.
        declare -a drains=()
        for ((k = 1; k <= SMALL_REPEAT; k++)); do
            measure_drain small "$WORK/small.db" /fcm/send "$SMALL_BACKLOG" span
            drains+=("$M_RATE")
            log "run $run/$RUNS  backlog $(fmt "$SMALL_BACKLOG") ($k/$SMALL_REPEAT): $(fmt "$M_RATE") deliveries/s" \
                "(10 %..90 % of the drain); peak RSS ${M_HWM} MiB | $M_CPU"
        done
        SMALL+=("$(median "${drains[@]}")") SMALL_HWM+=("$M_HWM")
        measure_drain large "$WORK/large.db" /fcm/send "$LARGE_BACKLOG" steady
        LARGE+=("$M_RATE") LARGE_HWM+=("$M_HWM")
        log "run $run/$RUNS  backlog $(fmt "$LARGE_BACKLOG"): $(fmt "$M_RATE") deliveries/s (median of $M_WINDOWS s;" \
            "mean $(fmt "$M_MEAN")); peak RSS ${M_HWM} MiB | $M_CPU"
    fi
done

# --- the table ---------------------------------------------------------------------------------------------
met() { awk -v a="$1" -v t="$2" -v op="${3:-ge}" 'BEGIN { print ((op == "ge" ? a >= t : a <= t) ? "met" : "NOT met") }'; }
row() { printf '%-50s %14s %22s %7s %24s\n' "$@"; }
echo
echo "Herald delivery, median of $RUNS runs, --durability full, --concurrency $CONCURRENCY, nginx stand-in on" \
    "127.0.0.1, $(nproc) cores, load tool on the same machine"
row figure value baseline ratio target
if wants single; then
    w1=$(median "${W1[@]}")
    s=$(median "${S[@]}")
    sr=$(median "${SR[@]}")
    row "W1: wrk -> nginx /fcm/send, $CONCURRENCY conns (req/s)" "$(fmt "$w1")" - - -
    row "single-token sends (deliveries/s)" "$(fmt "$s")" "W1 $(fmt "$w1") req/s" "$sr" \
        ">= $(fmt $TARGET_SINGLE) $(met "$s" $TARGET_SINGLE)"
    row "  ratio to W1 (median of the runs' ratios)" "$sr" - - ">= $TARGET_SINGLE_RATIO $(met "$sr" $TARGET_SINGLE_RATIO)"
fi
if wants multicast; then
    w1000=$(median "${W1000[@]}")
    bmc=$(median "${BMC[@]}")
    mc=$(median "${MC[@]}")
    row "W1000: wrk -> nginx, 1000-token body (tokens/s)" "$(fmt "$w1000")" - - -
    row "B: sqlite3 claim + set UPDATE (deliveries/s)" "$(fmt "$bmc")" - - -
    row "1000-token multicast (token deliveries/s)" "$(fmt "$mc")" "B $(fmt "$bmc")" "$(ratio "$mc" "$bmc")" \
        ">= $(fmt $TARGET_MULTICAST) $(met "$mc" $TARGET_MULTICAST)"
    row "  ratio to W1000" "$(ratio "$mc" "$w1000")" - - -
fi
if wants latency; then
    p50=$(median "${LP50[@]}")
    p99=$(median "${LP99[@]}")
    row "latency ack -> at FCM, $(fmt "$LATENCY_RATE") msg/s: p50 (ms)" "$p50" - - "<= $TARGET_P50_MS $(met "$p50" $TARGET_P50_MS le)"
    row "latency ack -> at FCM, $(fmt "$LATENCY_RATE") msg/s: p99 (ms)" "$p99" - - "<= $TARGET_P99_MS $(met "$p99" $TARGET_P99_MS le)"
fi
if wants backlog; then
    small=$(median "${SMALL[@]}")
    large=$(median "${LARGE[@]}")
    hwm=$(median "${LARGE_HWM[@]}")
    row "backlog $(fmt "$SMALL_BACKLOG") (deliveries/s)" "$(fmt "$small")" - - -
    row "backlog $(fmt "$LARGE_BACKLOG") (deliveries/s)" "$(fmt "$large")" "$(fmt "$SMALL_BACKLOG") $(fmt "$small")" \
        "$(ratio "$large" "$small")" ">= $TARGET_BACKLOG_RATIO $(met "$(ratio "$large" "$small")" $TARGET_BACKLOG_RATIO)"
    row "backlog $(fmt "$LARGE_BACKLOG"): peak RSS (MiB)" "$hwm" - - "<= $TARGET_RSS_MIB $(met "$hwm" $TARGET_RSS_MIB le)"
fi
echo "runs:$(wants single && echo " W1 ${W1[*]}; single ${S[*]};")$(wants multicast && echo " W1000 ${W1000[*]}; B ${BMC[*]}; multicast ${MC[*]};")$(
    wants latency && echo " p50 ${LP50[*]}; p99 ${LP99[*]};")$(wants backlog && echo " small ${SMALL[*]} (RSS ${SMALL_HWM[*]} MiB); large ${LARGE[*]} (RSS ${LARGE_HWM[*]} MiB)")"
echo "check: every delivery that Herald finished during the measurements ended delivered"
