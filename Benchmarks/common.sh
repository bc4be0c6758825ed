# shellcheck shell=bash
# Helpers shared by the scripts of Benchmarks/, each of which sources it first (`source "$(dirname "$0")/common.sh"`):
# sourcing it moves to the repository root and sets ROOT.
# The caller sets HERALD_PID and HERALD_LOG for stop_herald, and may set STOP_TIMEOUT_SECONDS (default 120).
# The stand-ins' helpers use ROOT, WORK and STREAMS and set STANDIN_PID, STANDIN_PORT and STATS_PORT.

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

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
# --- the HERALD_BENCH_* settings, the tools, the binaries and the work directory ------------------------------
# bench_settings NAME=DEFAULT...: each NAME from HERALD_BENCH_NAME (DEFAULT when that is unset or empty), checked by
# its kind: DELAY and *_DELAY milliseconds, DELAYS a list of them, POLL seconds (a decimal), every other a count (a
# positive integer). A script checks the settings of other kinds itself.
bench_settings() {
    local setting name value delay
    for setting in "$@"; do
        name=${setting%%=*}
        value=HERALD_BENCH_$name
        value=${!value:-${setting#*=}}
        case $name in
        DELAY | *_DELAY) [[ $value =~ ^[0-9]+$ ]] || fail "HERALD_BENCH_$name must be milliseconds (got '$value')" ;;
        DELAYS)
            for delay in $value; do
                [[ $delay =~ ^[0-9]+$ ]] || fail "HERALD_BENCH_DELAYS must be milliseconds (got '$delay')"
            done
            ;;
        POLL) [[ $value =~ ^[0-9]*\.?[0-9]+$ ]] || fail "HERALD_BENCH_POLL must be a number of seconds" ;;
        *) [[ $value =~ ^[1-9][0-9]*$ ]] || fail "the HERALD_BENCH_* counts must be positive integers (got '$value')" ;;
        esac
        printf -v "$name" '%s' "$value"
    done
}
# The tools named (and awk), installed when one is missing and, as root, on every run that builds: scripts/install-deps
# (Herald's build dependencies, node, openssl, sqlite3, curl, PostgreSQL's pgbench and psql), and the load tools'
# packages (h2load, wrk), which are not dependencies of Herald.
bench_tools() {
    local missing="" tool
    for tool in "$@"; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
    if [[ -n $missing || ${HERALD_BENCH_SKIP_BUILD:-0} != 1 ]]; then
        if [[ $(id -u) -eq 0 ]]; then
            ./scripts/install-deps
            for tool in "$@"; do
                command -v "$tool" >/dev/null && continue
                case $tool in h2load) install_package nghttp2-client ;; wrk) install_package wrk ;; esac
            done
        else
            log "not root: skipping scripts/install-deps"
        fi
    fi
    for tool in "$@" awk; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
}
install_package() { # $1 a Debian package of a tool the benchmarks use that Herald does not (as root)
    need_root "$1"
    log "installing $1 (a benchmark tool; not a dependency of Herald)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$1" >/dev/null
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
# HERALD_BENCH_BASE=PATH: another herald binary (another commit's release build) whose runs alternate with HERALD's.
# Sets BASE_BIN (empty without it).
base_binary() {
    BASE_BIN=${HERALD_BENCH_BASE:-}
    [[ -z $BASE_BIN || -x $BASE_BIN ]] || fail "HERALD_BENCH_BASE must be an executable herald (got '$BASE_BIN')"
}
make_work() { # $1 the script's name: sets WORK to a new directory in HERALD_BENCH_TMPDIR (a real disk), or TMPDIR
    WORK=$(mktemp -d "${HERALD_BENCH_TMPDIR:-${TMPDIR:-/tmp}}/herald-$1.XXXXXX")
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

# --- a node script that listens (a stand-in, a proxy, a receiver) ---------------------------------------------
# Runs node with the arguments after the third in the background, its output in $WORK/$1.out and .err, and waits up
# to 20 s for the line of JSON it prints once it listens, which names "$2" (its ports). $3 names it in errors. Sets
# NODE_PID.
NODE_PID=""
start_node() { # $1 name of the output files, $2 a key of the line, $3 what it is; then node's arguments
    local name=$1 key=$2 what=$3 waited=0
    shift 3
    rm -f "$WORK/$name.out"
    node "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    NODE_PID=$!
    while ! grep -q "\"$key\"" "$WORK/$name.out" 2>/dev/null; do
        kill -0 "$NODE_PID" 2>/dev/null || {
            cat "$WORK/$name.err" >&2
            fail "$what did not start"
        }
        sleep 0.05
        waited=$((waited + 1))
        ((waited < 400)) || fail "$what did not listen within 20 s"
    done
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
p256_key() { # $1 file, $2 what it is: a P-256 private key (PKCS#8 PEM, as Apple's .p8 and a VAPID key), owner-only
    (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null) ||
        fail "openssl could not make $2"
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
start_v1_herald() { # $1 database, then more serve flags: start_herald, the legacy app "default" sending to the stand-in
    start_herald "$1" --fcm-service-account "$WORK/service-account.json" \
        --fcm-endpoint "https://127.0.0.1:$STANDIN_PORT" "${@:2}"
}
STANDIN_PORT=""
STATS_PORT=""
STANDIN_SCRIPT=""
STANDIN_ARGS=()
start_standin() { # $1 delay ms, $2 optional: a file for the stand-in's per-request arrival log
    local -a extra=("${STANDIN_ARGS[@]}")
    [[ -n ${2:-} ]] && extra+=(--arrivals "$2")
    start_node standin stats_port "the stand-in" "${STANDIN_SCRIPT:-$ROOT/scripts/fcm-h2-standin.js}" \
        --cert "$WORK/cert.pem" --key "$WORK/key.pem" --delay-ms "$1" --streams "$STREAMS" "${extra[@]}"
    STANDIN_PID=$NODE_PID
    STANDIN_PORT=$(sed 's/.*"port":\([0-9]*\).*/\1/' "$WORK/standin.out")
    STATS_PORT=$(sed 's/.*"stats_port":\([0-9]*\).*/\1/' "$WORK/standin.out")
}
stat_of() { # $1 json, $2 key (a number)
    sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" <<<"$1"
}
standin_stats() { curl -fsS --max-time 5 "http://127.0.0.1:$STATS_PORT/stats"; }
stat_growth() { # $1 and $2 the stand-in's stats before and after, $3 key: how much it grew
    echo $(($(stat_of "$2" "$3") - $(stat_of "$1" "$3")))
}

# --- the Web Push stand-in (scripts/webpush-h2-standin.js under node; Benchmarks/webpush.sh, hostile-push.sh) ------
# Starts it with its certificate ($1 delay ms, it decrypts one body in $2), makes the run's VAPID key (VAPID_FILE) and
# app "web" in the --config file CONFIG (APP; allow_private_endpoints, the stand-in being on 127.0.0.1, SPEC §19), and
# sets P256DH and AUTH to the keys of the stand-in's subscription "b", which every subscription /push/b-<n> shares.
start_webpush_standin() { # $1 delay ms, $2 decrypt every
    local subscription
    standin_certificate
    VAPID_FILE=$WORK/vapid.pem
    p256_key "$VAPID_FILE" "the VAPID key"
    STANDIN_SCRIPT=$ROOT/scripts/webpush-h2-standin.js
    STANDIN_ARGS=(--decrypt-every "$2" --shared-subscriber b)
    start_standin "$1"
    CONFIG=$WORK/webpush.json
    APP=web
    printf '{"apps":[{"name":"web","provider":"webpush","vapid_private_key_file":"%s","vapid_subject":"mailto:bench@example.com","allow_private_endpoints":true}]}\n' \
        "$VAPID_FILE" >"$CONFIG"
    subscription=$(curl -fsS --max-time 5 -d '{"names":["b"]}' "http://127.0.0.1:$STATS_PORT/subscriptions") ||
        fail "the stand-in made no subscription"
    P256DH=$(sed -n 's/.*"p256dh":"\([^"]*\)".*/\1/p' <<<"$subscription")
    AUTH=$(sed -n 's/.*"auth":"\([^"]*\)".*/\1/p' <<<"$subscription")
    [[ -n $P256DH && -n $AUTH ]] || fail "the stand-in's subscription has no keys: $subscription"
}

# --- the stand-in scripts (apns.sh, hms.sh, hostile-push.sh, v1.sh, webhooks.sh, webpush.sh): one run's processes ---
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
# --- Herald sending to the stand-in ------------------------------------------------------------------------------
# PORT is set by start_herald. The scripts with one app from a --config file (apns.sh, hms.sh, hostile-push.sh,
# webpush.sh) set CONFIG (the file) and APP (the app whose figures poller follows), and drain.
PORT=""
start_herald() { # $1 database, then serve's flags: serve trusting the stand-in's certificate
    local db=$1 tries
    shift
    HERALD_LOG=$WORK/herald.log
    for tries in 1 2 3 4 5; do
        PORT=$(free_port)
        SSL_CERT_FILE=$WORK/cert.pem "$HERALD" serve --db "$db" --listen "127.0.0.1:$PORT" --durability full "$@" \
            2>"$HERALD_LOG" &
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

# Starts Herald on database $1 with $CONFIG and the poller writing file $2, resumes APP, and returns once BACKLOG
# deliveries are delivered, or RAMP + DURATION + $3 (60) s later. The caller stops POLLER_PID and Herald.
drain() { # $1 database, $2 the poller's file, $3 optional: the seconds of grace
    local deadline last
    start_herald "$1" --config "$CONFIG"
    poller "$HERALD_PID" "$PORT" >"$2" &
    POLLER_PID=$!
    "$HERALD" resume "$APP" --db "$1" >/dev/null 2>&1 || fail "herald resume failed"
    deadline=$(($(date +%s) + RAMP + DURATION + ${3:-60}))
    while (($(date +%s) < deadline)); do
        kill -0 "$HERALD_PID" 2>/dev/null || fail "herald stopped during the drain: $(tail -3 "$HERALD_LOG")"
        last=$(tail -1 "$2" 2>/dev/null | cut -d' ' -f2)
        [[ -n $last ]] && ((last >= BACKLOG)) && break
        sleep 0.5
    done
}

stop_drain() { # the poller and Herald
    stop_pid "$POLLER_PID" TERM
    POLLER_PID=""
    stop_herald
}
# Stops sending (pauses app $2 in database $1), lets what is in flight land, stops the drain, and compares the two
# sides' counts against the stand-in's stats $3 from before the drain: sets AFTER (the stand-in's stats now),
# H_COUNTED (requests Herald counted), H_WIRE (requests the stand-in saw) and H_DUPLICATES.
stop_paused_drain() { # $1 database, $2 app, $3 the stand-in's stats before
    local text
    "$HERALD" pause "$2" --db "$1" >/dev/null 2>&1 || fail "herald pause failed"
    sleep 3
    text=$(curl -fsS --max-time 5 "http://127.0.0.1:$PORT/metrics")
    AFTER=$(standin_stats)
    stop_drain
    H_COUNTED=$(metric "$text" "herald_fcm_requests_total{app=\"$2\"")
    H_WIRE=$(stat_growth "$3" "$AFTER" requests)
    H_DUPLICATES=$(stat_growth "$3" "$AFTER" duplicates)
}
# Fails unless every delivery in database $1 ended delivered, or with $2 "queued" is that or still queued (the drain
# was paused before the end), saying how the others ended.
check_delivered() { # $1 database, $2 optional: queued
    local others
    others=$(sqlite3 "$1" "SELECT count(*) FROM deliveries WHERE state NOT IN ('delivered', '${2:-delivered}')")
    ((others == 0)) || fail "$others deliveries ended other than delivered: $(sqlite3 "$1" \
        "SELECT state, reason, count(*) FROM deliveries WHERE state <> 'delivered' GROUP BY 1, 2 LIMIT 5")"
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

# --- batch request bodies of single-token v1 messages (Benchmarks/netfault.sh, postgres.sh) -----------------------
TOKEN_FILL=$(printf 'x%.0s' $(seq 124)) # the tail of the generated tokens: 152 bytes in all, as FCM's
# The message of ingest.lua's single-v1 mode, with a day's TTL so that it outlives any run.
V1_CONTENT='"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},'
V1_CONTENT+='"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},'
V1_CONTENT+='"android":{"priority":"high","ttl":"86400s","notification":{"sound":"default"}}'
# $1 messages as POST /v1/messages/batch bodies of BATCH_SIZE, $WORK/batches/NNNNNN.json: 152-byte tokens in random
# order (as v1.sh's), with $2 (three characters) in each, so that one script's tokens are not another's.
make_batches() { # $1 messages, $2 the tokens' mark
    mkdir -p "$WORK/batches"
    awk -v n="$1" -v size="$BATCH_SIZE" -v dir="$WORK/batches" -v fill="$TOKEN_FILL" -v content="$V1_CONTENT" \
        -v mark="$2" '
        BEGIN {
            for (i = 1; i <= n; i++) {
                if ((i - 1) % size == 0) {
                    if (file != "") { printf "]}" > file; close(file) }
                    file = sprintf("%s/%06d.json", dir, (i - 1) / size); printf "{\"messages\":[" > file; sep = ""
                }
                printf "%s{\"message\":{\"token\":\"%08x%s%010d:APA91b%s\",%s}}", sep,
                    (i * 2654435761) % 4294967296, mark, i, fill, content > file
                sep = ","
            }
            printf "]}" > file; close(file)
        }'
}

# --- backlogs, written with the sqlite3 shell in the shape ingest stores them ------------------------------------
new_database() { # $1 path: a new database, made by `herald migrate`
    rm -f "$1" "$1-wal" "$1-shm"
    "$HERALD" migrate --db "$1" >/dev/null 2>"$WORK/migrate.log" || {
        cat "$WORK/migrate.log" >&2
        fail "herald migrate failed"
    }
}
migrate_and_pause() { # $1 --db value (a file or a URL): the schema, and app "default" paused
    "$HERALD" migrate --db "$1" >/dev/null 2>"$WORK/migrate.log" &&
        "$HERALD" pause default --reason benchmark --db "$1" >/dev/null 2>>"$WORK/migrate.log" || {
        cat "$WORK/migrate.log" >&2
        fail "herald migrate/pause failed"
    }
}
# Any further arguments are a command that runs sqlite3 (valgrind and its options, say).
run_sqlite() { # $1 database, $2 SQL file, $3 what it does (for the error): sqlite3 as CHILD_PID, which cleanup stops
    "${@:4}" sqlite3 -bail "$1" <"$2" >"$WORK/sqlite3.out" 2>&1 &
    CHILD_PID=$!
    wait "$CHILD_PID" || {
        cat "$WORK/sqlite3.out" >&2
        fail "$3 failed"
    }
    CHILD_PID=""
}
# Runs the SQL on stdin in a new database $1 in which app $2 is paused, so that `herald resume $2` starts the drain.
generate_backlog() { # $1 path, $2 app; the SQL on stdin
    local db=$1 now
    new_database "$db"
    now=$(now_ms)
    {
        echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
        echo "INSERT INTO apps (name, paused, pause_reason, paused_at) VALUES ('$2', 1, 'benchmark preload', $now)"
        echo "  ON CONFLICT (name) DO UPDATE SET paused = 1, pause_reason = excluded.pause_reason, paused_at = excluded.paused_at;"
        cat
        echo "PRAGMA wal_checkpoint(TRUNCATE);"
    } >"$WORK/generate.sql"
    run_sqlite "$db" "$WORK/generate.sql" "generating the backlog"
    rm -f "$WORK/generate.sql"
}
# A backlog of $2 legacy messages of $3 tokens each (1 unless given) to app "default" (Benchmarks/delivery.sh, v1.sh,
# webhooks.sh), in the shape Connection.insertMessage writes: 26-character ids in creation order, the stored payload
# (with a TTL of a day, so that nothing expires while a benchmark runs), one delivery per token with next_attempt_at =
# created_at (the ingest time, 100 messages per ms here), priority high. Tokens are 152 bytes in random order, as in
# ingest.lua. `herald resume default` starts the drain.
STORED_PAYLOAD='{"priority":"high","time_to_live":86400,"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute.","sound":"default"}}'
make_backlog() { # $1 path, $2 messages, $3 optional: tokens per message
    generate_backlog "$1" default < <(legacy_messages "$2" "${3:-1}")
}
legacy_messages() { # $1 messages, $2 tokens per message: the SQL
    local messages=$1 per=$2 base first last chunk
    base=$(($(now_ms) - messages / 100 - 60000))
    chunk=$((200000 / per > 0 ? 200000 / per : 1))
    for ((first = 1; first <= messages; first += chunk)); do
        last=$((first + chunk - 1 < messages ? first + chunk - 1 : messages))
        # Message m's deliveries are the values (m-1)*per+1 .. m*per.
        printf '%s\n' "BEGIN;
INSERT INTO messages (id, app, idempotency_key, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, created_at, expires_at)
  SELECT printf('01BENCH%019d', value), 'default', NULL, '$STORED_PAYLOAD', 'tokens', NULL, 'high', 86400, 0,
         $base + value / 100, $base + value / 100 + 86400000
  FROM generate_series($first, $last);
INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)
  SELECT printf('01BENCH%019d', (value - 1) / $per + 1), 'default',
         printf('%08xq01%010d:APA91b', (value * 2654435761) & 4294967295, value) || '$TOKEN_FILL',
         'queued', $base + ((value - 1) / $per + 1) / 100, $base + ((value - 1) / $per + 1) / 100, 0,
         $base + ((value - 1) / $per + 1) / 100
  FROM generate_series($(((first - 1) * per + 1)), $((last * per)));
COMMIT;"
    done
}

# The SQL of a backlog of v1 messages (Benchmarks/apns.sh, hostile-push.sh, webpush.sh) as `POST /v1/messages` stores
# one to app $2 with "token" as its target and no options (priority normal, the 4-week TTL): the payload $3 (the
# message without its target), one delivery each, to the token the SQL $4 makes of the message's number `value`.
V1_TTL=2419200
v1_messages() { # $1 messages, $2 app, $3 payload, $4 the token's SQL
    local messages=$1 base first last chunk=100000
    base=$(($(now_ms) - messages / 100 - 60000))
    for ((first = 1; first <= messages; first += chunk)); do
        last=$((first + chunk - 1 < messages ? first + chunk - 1 : messages))
        printf '%s\n' "BEGIN;
INSERT INTO messages (id, app, idempotency_key, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, created_at, expires_at, format, token_field)
  SELECT printf('01BENCH%019d', value), '$2', NULL, '$3', 'tokens', NULL, 'normal', $V1_TTL, 0,
         $base + value / 100, $base + value / 100 + $V1_TTL * 1000, 'v1', 'token'
  FROM generate_series($first, $last);
INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)
  SELECT printf('01BENCH%019d', value), '$2', $4, 'queued', $base + value / 100, $base + value / 100, 1,
         $base + value / 100
  FROM generate_series($first, $last);
COMMIT;"
    done
}

# A backlog of $2 v1 messages of 1000 tokens each to HMS app "huawei" in database $1 (Benchmarks/hms.sh,
# hms-writer.sh), as `POST /v1/messages` stores a message with "tokens" (format 'v1', the payload the message without
# its target: notification, data and an android block; 1000 deliveries each, one distinct token per delivery, all
# of a message due at once), with "huawei" paused.
HMS_PAYLOAD='{"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87"},"android":{"priority":"NORMAL","notification":{"channel_id":"goals"}}}'
hms_backlog() { # $1 path, $2 messages
    local base count messages=$2 backlog=$(($2 * 1000))
    base=$(($(now_ms) - 60000))
    generate_backlog "$1" huawei <<SQL
BEGIN;
INSERT INTO messages (id, app, idempotency_key, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, created_at, expires_at, format, token_field)
  SELECT printf('01BENCH%019d', value), 'huawei', NULL, '$HMS_PAYLOAD', 'tokens', NULL, 'normal', $V1_TTL, 0,
         $base + value, $base + value + $V1_TTL * 1000, 'v1', 'token'
  FROM generate_series(1, $messages);
INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)
  SELECT printf('01BENCH%019d', value / 1000 + 1), 'huawei', printf('IQAAAACy0%08x%056x', value * 2654435761 & 4294967295, value),
         'queued', $base + value / 1000 + 1, $base + value / 1000 + 1, 1, $base + value / 1000 + 1
  FROM generate_series(0, $backlog - 1);
COMMIT;
SQL
    count=$(sqlite3 "$1" "SELECT count(DISTINCT token) FROM deliveries")
    ((count == backlog)) || fail "the backlog has $count distinct tokens, not $backlog"
}
