#!/usr/bin/env bash
# Outcome webhooks benchmark (SPEC §10's outcome-webhooks row, §23): Herald with its default settings draining a
# backlog of single-token FCM v1 messages to the TLS + HTTP/2 stand-in of Benchmarks/v1.sh (scripts/fcm-h2-standin.js,
# answering after HERALD_BENCH_DELAY ms, 100 streams per connection: Herald's full rate, over 10,000 sends/s), once
# without an outcome webhook and once with the top-level one posting every outcome to a local receiver, alternated in
# every run (without, with; with, without; ...). The receiver is a tiny node HTTP server written for the run: for each
# outcome of a batch it records (its receive time - the outcome's `at`), and answers 204 without checking the
# signature (the Standard Webhooks check is the integration tests' job; here it would only make the receiver slow).
#   rate      deliveries that reached `delivered` per second: the slope of herald_deliveries_total{delivered} from
#             HERALD_BENCH_RAMP s after the first delivery to the 95 % mark (v1.sh's window); with webhooks on, the
#             ratio to the run without must be >= 0.9
#   lag       p50 and p99 over every outcome of the drain of (received at the receiver - `at`), in ms: <= 5 s p99;
#             after the drain the run waits until the receiver has every outcome once (the table says how many
#             arrived twice: 0 for a healthy run)
# Nothing leaves loopback.
#
# Usage, from the repository root (root on Debian/Ubuntu installs node, openssl and nghttp2-client if missing):
#   flock /tmp/herald-bench.lock Benchmarks/webhooks.sh
# Environment (all optional):
#   HERALD_BENCH_RUNS=3              rounds (each a drain without and one with webhooks); the table shows medians
#   HERALD_BENCH_BACKLOG=200000      single-token messages preloaded per drain
#   HERALD_BENCH_DELAY=30            the stand-in's answer delay (ms)
#   HERALD_BENCH_RAMP=2              seconds after the first delivery that are not counted
#   HERALD_BENCH_POLL=0.2            seconds between two looks at /metrics
#   HERALD_BENCH_TMPDIR=$TMPDIR|/tmp where the databases go (a real disk)
#   HERALD_BENCH_SKIP_BUILD=1        use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1              keep the work directory
# Exit status: non-zero on errors (a tool failing, Herald stopping, a delivery not ending `delivered`, an outcome
# missing at the receiver), never because a target was missed.
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
STOP_TIMEOUT_SECONDS=60

bench_settings RUNS=3 BACKLOG=200000 DELAY=30 RAMP=2 POLL=0.2
STREAMS=100
TARGET_RATIO=0.90
TARGET_P99_MS=5000
RECEIVER_TIMEOUT=120 # seconds after the drain for the last outcomes to reach the receiver

standin_run # its cleanup stops CHILD_PID: the receiver
bench_tools node openssl h2load sqlite3 curl
build_herald
make_work webhooks

# --- the stand-in (Benchmarks/common.sh) --------------------------------------------------------------------
standin_credentials
start_standin "$DELAY"
write_service_account "$STANDIN_PORT"
"$HERALD" webhook-secret --out "$WORK/outcomes.whsec" >/dev/null || fail "herald webhook-secret failed"

# --- the receiver ------------------------------------------------------------------------------------------
cat >"$WORK/receiver.js" <<'EOF'
// Records (now - at) of every outcome it is posted, one per line in argv[2]; GET /stats: {"outcomes", "distinct"}.
const http = require("http");
const fs = require("fs");
const out = fs.createWriteStream(process.argv[2]);
const seen = new Set();
let outcomes = 0;
const server = http.createServer((request, response) => {
    if (request.method === "GET") {
        response.writeHead(200, { "content-type": "application/json" });
        return response.end(JSON.stringify({ outcomes, distinct: seen.size }));
    }
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
        const now = Date.now();
        let lines = "";
        for (const item of JSON.parse(Buffer.concat(chunks)).data) {
            lines += (now - item.at) + "\n";
            seen.add(item.seq);
            outcomes++;
        }
        out.write(lines);
        response.writeHead(204);
        response.end();
    });
});
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
EOF
RECEIVER_PORT=""
start_receiver() { # $1 the file of latencies
    start_node receiver port "the receiver" "$WORK/receiver.js" "$1"
    CHILD_PID=$NODE_PID
    RECEIVER_PORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$WORK/receiver.out")
    printf '{"outcome_webhook": {"url": "http://127.0.0.1:%s/hook", "secret_file": "%s"}}\n' "$RECEIVER_PORT" \
        "$WORK/outcomes.whsec" >"$WORK/webhook.json"
}
receiver_stat() { curl -fsS --max-time 5 "http://127.0.0.1:$RECEIVER_PORT/stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }

# One drain of the backlog, with the webhook when $1 is "with". Sets RATE, and with the webhook P50 P99 REPEATS.
measure() {
    local mode=$1 db=$WORK/run.db polls=$WORK/polls.txt latencies=$WORK/latencies.txt last waited
    local -a flags=()
    cp "$WORK/template.db" "$db"
    rm -f "$db-wal" "$db-shm"
    if [[ $mode == with ]]; then
        start_receiver "$latencies"
        flags=(--config "$WORK/webhook.json")
    fi
    start_v1_herald "$db" "${flags[@]}"
    while :; do
        text=$(curl -fsS --max-time 2 "http://127.0.0.1:$PORT/metrics" 2>/dev/null || true)
        echo "${EPOCHREALTIME/./} $(metric "$text" 'herald_deliveries_total{app="default",outcome="delivered"}')"
        sleep "$POLL"
    done >"$polls" &
    POLLER_PID=$!
    "$HERALD" resume default --db "$db" >/dev/null 2>&1 || fail "herald resume failed"
    while :; do
        kill -0 "$HERALD_PID" 2>/dev/null || fail "herald stopped during the drain: $(tail -3 "$HERALD_LOG")"
        last=$(tail -1 "$polls" 2>/dev/null | cut -d' ' -f2)
        [[ -n $last ]] && ((last >= BACKLOG)) && break
        sleep 0.5
    done
    stop_pid "$POLLER_PID" TERM
    POLLER_PID=""
    RATE=$(awk -v ramp="$RAMP" -v total="$BACKLOG" '
        { t[NR] = $1; c[NR] = $2 }
        END {
            for (i = 1; i <= NR && c[i] == 0; i++) ;
            for (a = i; a <= NR && t[a] < t[i] + ramp * 1e6; a++) ;
            for (b = a; b < NR && c[b] < 0.95 * total; b++) ;
            if (a >= NR || b <= a || c[b] <= c[a]) { print 0; exit }
            printf "%.1f\n", (c[b] - c[a]) / ((t[b] - t[a]) / 1e6)
        }' "$polls")
    if [[ $mode == with ]]; then
        waited=0
        until (($(receiver_stat distinct) >= BACKLOG)); do
            ((waited < RECEIVER_TIMEOUT * 10)) || fail "the receiver has $(receiver_stat distinct) of $BACKLOG outcomes"
            sleep 0.1
            waited=$((waited + 1))
        done
        REPEATS=$(($(receiver_stat outcomes) - $(receiver_stat distinct)))
        read -r P50 P99 <<<"$(sort -n "$latencies" | awk '{ v[NR] = $1 }
            END { printf "%d %d\n", v[int(NR * 0.50) + 1], v[int(NR * 0.99) + 1] }')"
        stop_pid "$CHILD_PID" TERM
        CHILD_PID=""
    fi
    stop_herald
    local ended
    ended=$(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE state = 'delivered'")
    ((ended == BACKLOG)) || fail "after the drain $ended of $BACKLOG deliveries are delivered"
    rm -f "$db" "$db-wal" "$db-shm" "$db.lock" "$latencies"
}

# --- the run -----------------------------------------------------------------------------------------------
log "Herald $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $RUNS runs;" \
    "backlog $(fmt "$BACKLOG") v1 messages; stand-in ${DELAY} ms, $STREAMS streams/connection; work directory $WORK"
make_backlog "$WORK/template.db" "$BACKLOG"
declare -a WITHOUT WITH LAG50 LAG99
REPEATED=0
for ((run = 1; run <= RUNS; run++)); do
    order=(without with)
    ((run % 2)) || order=(with without)
    for mode in "${order[@]}"; do
        measure "$mode"
        if [[ $mode == with ]]; then
            WITH+=("$RATE") LAG50+=("$P50") LAG99+=("$P99")
            REPEATED=$((REPEATED + REPEATS))
            log "run $run/$RUNS  with the webhook    $(fmt "$RATE") sends/s; at the receiver after p50 $P50 ms," \
                "p99 $P99 ms; $REPEATS outcomes twice"
        else
            WITHOUT+=("$RATE")
            log "run $run/$RUNS  without a webhook   $(fmt "$RATE") sends/s"
        fi
    done
done

met() { awk -v a="$1" -v t="$2" -v op="${3:-ge}" 'BEGIN { print ((op == "ge" ? a >= t : a <= t) ? "met" : "NOT met") }'; }
row() { printf '%-52s %12s %22s %7s %16s\n' "$@"; }
without=$(median "${WITHOUT[@]}")
with=$(median "${WITH[@]}")
p50=$(median "${LAG50[@]}")
p99=$(median "${LAG99[@]}")
echo
echo "Outcome webhooks, median of $RUNS runs, $(nproc) cores, stand-in ${DELAY} ms and receiver on the same machine"
row figure value baseline ratio target
row "send rate with the webhook on (sends/s)" "$(fmt "$with")" "without $(fmt "$without")" \
    "$(ratio "$with" "$without")" ">= $TARGET_RATIO $(met "$(ratio "$with" "$without")" $TARGET_RATIO)"
row "outcome -> receiver, p50 (ms)" "$p50" - - -
row "outcome -> receiver, p99 (ms)" "$p99" - - "<= $TARGET_P99_MS $(met "$p99" $TARGET_P99_MS le)"
row "outcomes received twice (all runs)" "$REPEATED" - - -
echo "runs: without ${WITHOUT[*]}; with ${WITH[*]}; p50 ${LAG50[*]} ms; p99 ${LAG99[*]} ms"
