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
build_herald() { # sets HERALD to the release build of ROOT, made first unless HERALD_BENCH_SKIP_BUILD=1
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
