# shellcheck shell=bash
# Helpers shared by Benchmarks/ingest.sh and Benchmarks/delivery.sh (sourced after `cd` to the repository root).
# The caller sets HERALD_PID and HERALD_LOG for stop_herald, and may set STOP_TIMEOUT_SECONDS (default 120).

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
