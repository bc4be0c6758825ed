# shellcheck shell=bash
# Helpers shared by the scripts of Benchmarks/ (sourced after `cd` to the repository root).
# The caller sets HERALD_PID and HERALD_LOG for stop_herald, and may set STOP_TIMEOUT_SECONDS (default 120).
# The FCM v1 stand-in's helpers (at the end) use ROOT, WORK and STREAMS and set STANDIN_PID, STANDIN_PORT and
# STATS_PORT.

log() { printf '%s\n' "$*" >&2; }
fail() {
    log "ERROR: $*"
    exit 1
}
need_root() {
    [[ $(id -u) -eq 0 ]] || fail "$1 is missing and installing it needs root (apt-get)"
}
median() { # numbers as arguments
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { r = (b > 0 ? a / b : 0); printf "%.2f", r }'; } # a / b, 0 when b is 0
HZ=$(getconf CLK_TCK)
fmt() { # number with thousands separators, no decimals
    awk -v n="$1" 'BEGIN { s = sprintf("%.0f", n); r = ""; while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) } print s r }'
}
remove_work() { # the run's work directory WORK, unless HERALD_BENCH_KEEP=1
    [[ -n ${WORK:-} && -d $WORK ]] || return 0
    if [[ ${HERALD_BENCH_KEEP:-0} == 1 ]]; then log "kept $WORK"; else rm -rf -- "$WORK"; fi
}
trap_cleanup() { # EXIT runs the caller's `cleanup`; INT and TERM end the script with their usual codes
    trap cleanup EXIT
    trap 'log "interrupted"; exit 130' INT
    trap 'log "terminated"; exit 143' TERM
}
# Sets HERALD to the release build of ROOT, made first unless HERALD_BENCH_SKIP_BUILD=1; HERALD_BENCH_BINARY=PATH: that
# binary instead, built by nobody here (another commit's, to alternate the two).
build_herald() {
    if [[ -n ${HERALD_BENCH_BINARY:-} ]]; then
        HERALD=$HERALD_BENCH_BINARY
        [[ -x $HERALD ]] || fail "HERALD_BENCH_BINARY $HERALD is not an executable"
        return
    fi
    if ! command -v swift >/dev/null && [[ -x /opt/swift/usr/bin/swift ]]; then PATH=/opt/swift/usr/bin:$PATH; fi
    if [[ ${HERALD_BENCH_SKIP_BUILD:-0} != 1 ]]; then
        log "building: swift build -c release"
        swift build -c release >&2
    fi
    HERALD=$ROOT/.build/release/herald
    [[ -x $HERALD ]] || fail "$HERALD not found (build failed?)"
}
free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    fail "no free loopback port found"
}
stop_herald() { # SIGTERM: Herald finishes or releases what is in flight, checkpoints and exits 0
    local pid=$HERALD_PID status=0 waited=0 limit=$((${STOP_TIMEOUT_SECONDS:-120} * 10))
    [[ -n $pid ]] || return 0
    HERALD_PID=""
    kill -TERM "$pid" 2>/dev/null || return 0
    while kill -0 "$pid" 2>/dev/null && ((waited < limit)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        [[ ${1:-} == quiet ]] || fail "herald did not stop within ${STOP_TIMEOUT_SECONDS:-120} s of SIGTERM"
        return 0
    fi
    wait "$pid" 2>/dev/null || status=$?
    if ((status != 0)) && [[ ${1:-} != quiet ]]; then
        tail -5 "$HERALD_LOG" >&2
        fail "herald exited with status $status after SIGTERM"
    fi
}

stop_pid() { # $1 pid, $2 signal: signal, wait up to 20 s, then SIGKILL
    local pid=$1 waited=0
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill "-$2" "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((waited < 200)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# --- CPU accounting ----------------------------------------------------------------------------------------
# Machine-wide busy and total ticks (all CPUs), and steal: "busy total steal".
machine_ticks() {
    awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; total = busy + $5 + $6; print busy, total, $9 }' /proc/stat
}
# Children's user+sys seconds as bash's `times` reports them (second line), summed.
children_seconds() {
    awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] } print s }' "$1"
}

# --- Herald's metrics --------------------------------------------------------------------------------------
metric() { # $1 metrics text, $2 series prefix: the sum of the matching series
    awk -v p="$2" 'index($0, p) == 1 { s += $NF } END { printf "%.0f", s }' <<<"$1"
}

# --- the FCM HTTP v1 stand-in (scripts/fcm-h2-standin.js under node) ----------------------------------------
# (Benchmarks/apns.sh runs scripts/apns-h2-standin.js through the same start_standin: it sets STANDIN_SCRIPT, and
# STANDIN_ARGS to the key options that stand-in needs.)
# The stand-in's self-signed certificate ($WORK/cert.pem with its key $WORK/key.pem, trusted by Herald through
# SSL_CERT_FILE), made for the run.
standin_certificate() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$WORK/key.pem" \
        -out "$WORK/cert.pem" -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null ||
        fail "openssl could not make the stand-in's certificate"
}
# The certificate and a service account's private key ($WORK/sa-key.pem; the stand-in does not check the JWT).
standin_credentials() {
    standin_certificate
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/sa-key.pem" 2>/dev/null ||
        fail "openssl could not make the service account's key"
}
write_service_account() { # $1 stand-in port: $WORK/service-account.json, its token_uri at the stand-in
    awk -v uri="https://127.0.0.1:$1/token" '
        { key = key $0 "\\n" }
        END {
            printf "{\"type\":\"service_account\",\"project_id\":\"standin\",\"private_key_id\":\"bench\","
            printf "\"private_key\":\"%s\",\"client_email\":\"bench@standin.iam.gserviceaccount.com\",", key
            printf "\"token_uri\":\"%s\"}\n", uri
        }' "$WORK/sa-key.pem" >"$WORK/service-account.json"
    chmod 600 "$WORK/service-account.json"
}
STANDIN_PORT=""
STATS_PORT=""
STANDIN_SCRIPT=""
STANDIN_ARGS=()
start_standin() { # $1 delay ms, $2 optional: a file for the stand-in's per-request arrival log
    local -a extra=("${STANDIN_ARGS[@]}")
    [[ -n ${2:-} ]] && extra+=(--arrivals "$2")
    rm -f "$WORK/standin.out"
    node "${STANDIN_SCRIPT:-$ROOT/scripts/fcm-h2-standin.js}" --cert "$WORK/cert.pem" --key "$WORK/key.pem" \
        --delay-ms "$1" --streams "$STREAMS" "${extra[@]}" >"$WORK/standin.out" 2>"$WORK/standin.err" &
    STANDIN_PID=$!
    local waited=0
    while ! grep -q stats_port "$WORK/standin.out" 2>/dev/null; do
        kill -0 "$STANDIN_PID" 2>/dev/null || {
            cat "$WORK/standin.err" >&2
            fail "the stand-in did not start"
        }
        sleep 0.05
        waited=$((waited + 1))
        ((waited < 400)) || fail "the stand-in did not listen within 20 s"
    done
    STANDIN_PORT=$(sed 's/.*"port":\([0-9]*\).*/\1/' "$WORK/standin.out")
    STATS_PORT=$(sed 's/.*"stats_port":\([0-9]*\).*/\1/' "$WORK/standin.out")
}
stat_of() { # $1 json, $2 key (a number)
    sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" <<<"$1"
}
standin_stats() { curl -fsS --max-time 5 "http://127.0.0.1:$STATS_PORT/stats"; }

# --- the stand-in scripts (apns.sh, v1.sh, webpush.sh): one run's processes and its tools --------------------------
standin_run() { # declares the run's processes, and stopping every one of them as the EXIT/INT/TERM trap
    WORK="" HERALD_PID="" HERALD_LOG="" STANDIN_PID="" POLLER_PID="" CHILD_PID=""
    cleanup() {
        local status=$?
        trap - EXIT INT TERM
        stop_pid "$CHILD_PID" TERM
        stop_pid "$POLLER_PID" TERM
        stop_herald quiet || true
        stop_pid "$STANDIN_PID" TERM
        remove_work
        exit "$status"
    }
    trap_cleanup
}
standin_tools() { # node, openssl, h2load, sqlite3, curl: installed when missing, and on every run that builds (as root)
    local missing="" tool
    for tool in node openssl h2load sqlite3 curl; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
    if [[ -n $missing || ${HERALD_BENCH_SKIP_BUILD:-0} != 1 ]]; then
        if [[ $(id -u) -eq 0 ]]; then
            ./scripts/install-deps
            command -v h2load >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client
        else
            log "not root: skipping scripts/install-deps"
        fi
    fi
    for tool in node openssl h2load sqlite3 curl awk; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
}

# --- Herald with one app from a --config file, sending to the stand-in (Benchmarks/apns.sh, webpush.sh) -------
# They set CONFIG (the --config file) and APP (the app whose figures are followed); PORT is set by start_herald.
PORT=""
start_herald() { # $1 database: serve with $CONFIG, trusting the stand-in's certificate
    local tries
    HERALD_LOG=$WORK/herald.log
    for tries in 1 2 3 4 5; do
        PORT=$(free_port)
        SSL_CERT_FILE=$WORK/cert.pem "$HERALD" serve --db "$1" --listen "127.0.0.1:$PORT" --config "$CONFIG" \
            --durability full 2>"$HERALD_LOG" &
        HERALD_PID=$!
        local waited=0
        while ((waited < 300)); do
            kill -0 "$HERALD_PID" 2>/dev/null || break
            if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/metrics" 2>/dev/null; then return 0; fi
            sleep 0.1
            waited=$((waited + 1))
        done
        stop_herald quiet
    done
    tail -5 "$HERALD_LOG" >&2
    fail "could not start herald"
}

# Follows /metrics every POLL s: "wall_us delivered connections cpu_ticks vmhwm_kib machine_busy_ticks
# standin_ticks steal_ticks" per line for app $APP, until killed (the last three for the CPU that processes other
# than Herald and the stand-in took, and what the hypervisor took: the machine is shared).
poller() { # $1 pid, $2 port
    local pid=$1 port=$2 text delivered connections ticks hwm key value busy steal standin
    while kill -0 "$pid" 2>/dev/null; do
        text=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/metrics" 2>/dev/null || true)
        delivered=$(metric "$text" "herald_deliveries_total{app=\"$APP\",outcome=\"delivered\"}")
        connections=$(metric "$text" "herald_fcm_connections{app=\"$APP\"}")
        read -r ticks < <(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
        hwm=0
        while read -r key value _; do [[ $key == VmHWM: ]] && hwm=$value; done <"/proc/$pid/status"
        read -r busy _ steal < <(machine_ticks)
        read -r standin < <(awk '{ print $14 + $15 }' "/proc/$STANDIN_PID/stat" 2>/dev/null || echo 0)
        echo "${EPOCHREALTIME/./} $delivered $connections $ticks $hwm $busy $standin $steal"
        sleep "$POLL"
    done
}

# The rate window of a poller's lines: from RAMP s after the first delivery to the 95 % mark of BACKLOG, or
# DURATION s later at most. Prints "rate cpu_us_per_send connections peak_rss_mib standin_pct others_pct steal_pct"
# (% of one core over the window: the stand-in; every other process, the poller's curl and awk included; steal).
rate_window() { # $1 the poller's output
    awk -v ramp="$RAMP" -v duration="$DURATION" -v total="$BACKLOG" -v hz="$HZ" '
        { t[NR] = $1; c[NR] = $2; k[NR] = $3; cpu[NR] = $4; m[NR] = $6; n[NR] = $7; st[NR] = $8; if ($3 > conn) conn = $3; if ($5 > hwm) hwm = $5 }
        END {
            for (i = 1; i <= NR && c[i] == 0; i++) ;
            start = t[i] + ramp * 1e6
            for (a = i; a <= NR && t[a] < start; a++) ;
            for (b = a; b < NR && c[b] < 0.95 * total && t[b] < t[a] + duration * 1e6; b++) ;
            if (a >= NR || b <= a || c[b] <= c[a]) { print "0 0 " conn + 0 " " int(hwm / 1024) " 0 0 0"; exit }
            sends = c[b] - c[a]; secs = (t[b] - t[a]) / 1e6
            herald = cpu[b] - cpu[a]; standin = n[b] - n[a]; steal = st[b] - st[a]
            others = m[b] - m[a] - herald - standin - steal # machine_ticks counts steal as busy
            printf "%.1f %.1f %d %d %.0f %.0f %.0f\n", sends / secs, herald / hz * 1e6 / sends, conn, int(hwm / 1024),
                standin / hz / secs * 100, (others > 0 ? others : 0) / hz / secs * 100, steal / hz / secs * 100
        }' "$1"
}

# --- a backlog of single-token messages (Benchmarks/v1.sh, webhooks.sh; as Benchmarks/delivery.sh makes it) ---------
# Uses HERALD and WORK; app "default" is paused, `herald resume default` starts the drain.
TOKEN_FILL=$(printf 'x%.0s' $(seq 124))
STORED_PAYLOAD='{"priority":"high","time_to_live":86400,"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute.","sound":"default"}}'
make_backlog() { # $1 path, $2 messages
    local db=$1 messages=$2 sql=$WORK/generate.sql now base chunk=200000 first last
    rm -f "$db" "$db-wal" "$db-shm"
    "$HERALD" migrate --db "$db" >/dev/null 2>"$WORK/migrate.log" || {
        cat "$WORK/migrate.log" >&2
        fail "herald migrate failed"
    }
    now=$(now_ms)
    base=$((now - messages / 100 - 60000))
    {
        echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
        echo "INSERT INTO apps (name, paused, pause_reason, paused_at) VALUES ('default', 1, 'benchmark preload', $now)"
        echo "  ON CONFLICT (name) DO UPDATE SET paused = 1, pause_reason = excluded.pause_reason, paused_at = excluded.paused_at;"
        for ((first = 1; first <= messages; first += chunk)); do
            last=$((first + chunk - 1 < messages ? first + chunk - 1 : messages))
            printf '%s\n' "BEGIN;
INSERT INTO messages (id, app, idempotency_key, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, created_at, expires_at)
  SELECT printf('01BENCH%019d', value), 'default', NULL, '$STORED_PAYLOAD', 'tokens', NULL, 'high', 86400, 0,
         $base + value / 100, $base + value / 100 + 86400000
  FROM generate_series($first, $last);
INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)
  SELECT printf('01BENCH%019d', value), 'default',
         printf('%08xq01%010d:APA91b', (value * 2654435761) & 4294967295, value) || '$TOKEN_FILL',
         'queued', $base + value / 100, $base + value / 100, 0, $base + value / 100
  FROM generate_series($first, $last);
COMMIT;"
        done
        echo "PRAGMA wal_checkpoint(TRUNCATE);"
    } >"$sql"
    sqlite3 -bail "$db" <"$sql" >"$WORK/generate.out" 2>&1 || {
        cat "$WORK/generate.out" >&2
        fail "generating the backlog failed"
    }
    rm -f "$sql"
}
