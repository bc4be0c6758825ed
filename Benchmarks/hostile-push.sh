#!/usr/bin/env bash
# Hostile push services (SPEC §10's hostile-endpoints row, §19): a Web Push app whose subscriptions are 90 % on one
# good push-service origin (scripts/webpush-h2-standin.js, 201 after 30 ms) and 10 % on five hostile origins
# (scripts/hostile-push-standin.js, an origin per behaviour: 403 to everything, 429 with Retry-After: 86400, 400,
# never answering, 8 MiB answers), against the same good subscriptions alone, alternated in one run with the same
# release binary. Figures:
#   good rate    the good origin's deliveries per second: the slope of
#                herald_deliveries_total{app="web",outcome="delivered"} between the end of the ramp-up and the 95 %
#                mark of the good backlog (hostile origins never deliver)
#   ratio        the run with hostile subscriptions against the run without them (target >= 0.8)
#   app          never paused and its own gate never closed (apps.paused, apps.gated_at), in the hostile run
#   peak RSS     VmHWM of Herald in the hostile run (target <= 300 MiB)
#   hostile      how each hostile origin's deliveries ended (dead 400s, deferred 403/429, ResponseTooLarge retries)
# The backlog is written with the sqlite3 shell in the shape `POST /v1/messages` stores a v1 message to a Web Push app
# (as Benchmarks/webpush.sh does), into a database made by `herald migrate` with app "web" paused; `herald resume
# web` starts each drain. The config sets allow_private_endpoints (the stand-ins are on 127.0.0.1, ephemeral ports).
#
# Usage, from the repository root (root on Debian/Ubuntu installs node, openssl and nghttp2-client if missing):
#   Benchmarks/hostile-push.sh
# Environment (all optional):
#   HERALD_BENCH_RUNS=3              rounds of (without, with); the table shows medians
#   HERALD_BENCH_DELAY=30            the good stand-in's answer delay (ms)
#   HERALD_BENCH_BACKLOG=50000       good single-subscription messages per drain (the hostile run adds a ninth more)
#   HERALD_BENCH_DURATION=15         seconds at most of the rate window
#   HERALD_BENCH_RAMP=2              seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.2            seconds between two looks at /metrics
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp where the databases go (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1        use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1              keep the work directory
# Exit status: non-zero on errors (a tool failing, Herald stopping, a good delivery not delivered, a duplicate),
# never because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings RUNS=3 DELAY=30 BACKLOG=50000 DURATION=15 RAMP=2 POLL=0.2
GOOD=$BACKLOG # the good subscriptions; rate_window's and drain's 95 % mark counts good deliveries alone
HOSTILE=$((GOOD / 9)) # 10 % of all subscriptions
STREAMS=100
MODES=(forbidden toomany bad hang huge)

standin_run
HOSTILE_PID=""
trap 'stop_pid "$HOSTILE_PID" TERM; cleanup' EXIT

bench_tools node openssl h2load sqlite3 curl
build_herald
make_work hostile

# --- the stand-ins, the VAPID key and app "web" ------------------------------------------------------------------
start_webpush_standin "$DELAY" 100
start_node hostile stats_port "the hostile stand-in" "$ROOT/scripts/hostile-push-standin.js" \
    --cert "$WORK/cert.pem" --key "$WORK/key.pem"
HOSTILE_PID=$NODE_PID
declare -A HOSTILE_PORT
for mode in "${MODES[@]}"; do
    HOSTILE_PORT[$mode]=$(sed -n "s/.*\"$mode\":\([0-9]*\).*/\1/p" "$WORK/hostile.out")
    [[ -n ${HOSTILE_PORT[$mode]} ]] || fail "the hostile stand-in has no $mode origin: $(cat "$WORK/hostile.out")"
done

# --- the backlogs -----------------------------------------------------------------------------------------------
STORED_PAYLOAD='{"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87"}}'
make_backlog() { # $1 path, $2 hostile subscriptions (0: the good ones alone)
    local endpoint i=0 mode
    # Every tenth message (while hostile ones remain) goes to a hostile origin, the five in turn.
    endpoint="CASE WHEN value % 10 = 0 AND value / 10 <= $2 THEN 'https://127.0.0.1:' || (CASE (value / 10) % 5"
    for mode in "${MODES[@]}"; do endpoint+=" WHEN $i THEN ${HOSTILE_PORT[$mode]}"; i=$((i + 1)); done
    endpoint+=" END) || '/push/h-' || value ELSE 'https://127.0.0.1:$STANDIN_PORT/push/b-' || value END"
    generate_backlog "$1" web < <(v1_messages $((GOOD + $2)) web "$STORED_PAYLOAD" \
        "($endpoint) || '#p256dh=$P256DH&auth=$AUTH'")
}

# One drain. Sets H_RATE H_HWM H_DUPLICATES H_GOOD_UNDELIVERED H_PAUSED H_GATED H_HOSTILE.
measure() { # $1 template database
    local db=$WORK/run.db polls=$WORK/polls.txt before after
    cp "$1" "$db"
    curl -fsS --max-time 5 -X POST "http://127.0.0.1:$STATS_PORT/forget-deliveries" >/dev/null ||
        fail "the stand-in did not forget its deliveries"
    before=$(standin_stats)
    drain "$db" "$polls" 90
    after=$(standin_stats)
    H_PAUSED=$(sqlite3 "$db" "SELECT paused FROM apps WHERE name = 'web'")
    H_GATED=$(sqlite3 "$db" "SELECT count(*) FROM apps WHERE name = 'web' AND gated_at IS NOT NULL")
    stop_drain
    H_DUPLICATES=$(stat_growth "$before" "$after" duplicates)
    H_GOOD_UNDELIVERED=$(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE token LIKE '%:$STANDIN_PORT/%' AND state <> 'delivered'")
    H_HOSTILE=$(sqlite3 -separator ' ' "$db" "SELECT substr(token, 19, instr(substr(token, 19), '/') - 1), state,
        coalesce(reason, '-'), count(*) FROM deliveries WHERE token NOT LIKE '%:$STANDIN_PORT/%' GROUP BY 1, 2, 3" |
        while read -r port state reason count; do
            for mode in "${MODES[@]}"; do [[ ${HOSTILE_PORT[$mode]} == "$port" ]] && port=$mode; done
            printf '%s:%s/%s=%s ' "$port" "$state" "$reason" "$count"
        done)
    read -r H_RATE _ _ H_HWM _ _ _ <<<"$(rate_window "$polls")"
    rm -f "$db" "$db-wal" "$db-shm" "$db.lock"
}

log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $RUNS rounds;" \
    "good origin ${DELAY} ms, $(fmt "$GOOD") good + $(fmt "$HOSTILE") hostile subscriptions; default settings"
make_backlog "$WORK/good.db" 0
make_backlog "$WORK/hostile.db" "$HOSTILE"

CLEAN="" MIXED="" HWMS="" PAUSED=0 GATED=0
for ((run = 1; run <= RUNS; run++)); do
    measure "$WORK/good.db"
    ((H_DUPLICATES == 0 && H_GOOD_UNDELIVERED == 0)) ||
        fail "without hostile origins: $H_DUPLICATES duplicates, $H_GOOD_UNDELIVERED good deliveries not delivered"
    CLEAN+=" $H_RATE"
    log "run $run/$RUNS  good only: $(fmt "$H_RATE") sends/s, peak RSS $H_HWM MiB"
    measure "$WORK/hostile.db"
    ((H_DUPLICATES == 0 && H_GOOD_UNDELIVERED == 0)) ||
        fail "with hostile origins: $H_DUPLICATES duplicates, $H_GOOD_UNDELIVERED good deliveries not delivered"
    MIXED+=" $H_RATE" HWMS+=" $H_HWM"
    PAUSED=$((PAUSED + H_PAUSED)) GATED=$((GATED + H_GATED))
    log "run $run/$RUNS  with 10 % hostile: $(fmt "$H_RATE") good sends/s, peak RSS $H_HWM MiB, app paused" \
        "$H_PAUSED, app gated $H_GATED | hostile: $H_HOSTILE"
done

# shellcheck disable=SC2086
{
    c=$(median $CLEAN)
    m=$(median $MIXED)
    h=$(median $HWMS)
}
met() { awk -v a="$1" -v t="$2" -v op="$3" 'BEGIN { ok = (op == ">=" ? a >= t : a <= t); print (ok ? "met" : "NOT met") }'; }
row() { printf '%-44s %12s %20s %7s %14s\n' "$@"; }
echo
echo "Herald Web Push with hostile origins, median of $RUNS alternated rounds, default settings, $(nproc) cores"
row figure value baseline ratio target
row "good origin sends/s, 10 % hostile" "$(fmt "$m")" "alone $(fmt "$c")" "$(ratio "$m" "$c")" \
    ">= 0.8 $(met "$(ratio "$m" "$c")" 0.8 '>=')"
row "Herald peak RSS (MiB), 10 % hostile" "$h" - - "<= 300 $(met "$h" 300 '<=')"
row "app paused / gated (rounds)" "$PAUSED / $GATED" - - "0 $(met $((PAUSED + GATED)) 0 '<=')"
echo "runs: alone$CLEAN; with hostile$MIXED; peak RSS MiB$HWMS"
