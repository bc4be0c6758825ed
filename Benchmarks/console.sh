#!/usr/bin/env bash
# The operator console on a big queue (SPEC §10, §18): every page and API call ≤ 300 ms with 5,000,000 deliveries
# stored, and a requeue of all that match going in chunks while ingest stays responsive.
#
#   Benchmarks/console.sh                      # 1,000,000 messages x 5 tokens = 5,000,000 deliveries
#   HERALD_BENCH_MESSAGES=100000 Benchmarks/console.sh   # a quicker look
#
# The database is generated with the sqlite3 shell in the shape ingest writes (as delivery.sh does), spread over
# three apps and the last 7 days: 60 % delivered, 10 % dropped, 15 % queued and due, 5 % queued for later, 10 %
# dead letters (500,000, six reasons), 200,000 registered tokens of 50,000 users and 200,000 token events. Every
# app is paused, so nothing is sent while it is measured. Then `herald serve` (release build) answers each call
# five times (curl's time_total; median and slowest printed); the requeue of every dead letter of one app and
# reason goes a chunk of 500 per request with a pause as long as the chunk took, as the page does it, while a
# message is posted every 20 ms and timed.
# Environment: HERALD_BENCH_MESSAGES, HERALD_BENCH_CHUNK (500), HERALD_BENCH_PAUSE (1; 0: chunks back to back),
# HERALD_BENCH_SKIP_BUILD=1, HERALD_BENCH_TMPDIR, HERALD_BENCH_KEEP=1.
set -euo pipefail
# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"

bench_settings MESSAGES=1000000
PER=5
TOKEN=bench-console-token
TARGET_MS=300
WORK=""
HERALD_PID=""
CHILD_PID=""
INGEST_PID=""
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop_pid "$INGEST_PID" TERM
    stop_pid "$CHILD_PID" TERM
    stop_herald quiet || true
    remove_work
    exit "$status"
}
trap_cleanup

bench_tools sqlite3 curl sort
build_herald
make_work console
DB=$WORK/herald.db

# --- the database ------------------------------------------------------------------------------------------
generate() {
    local sql=$WORK/generate.sql now base chunk first last t0 week=604800000
    new_database "$DB"
    now=$(now_ms)
    base=$((now - week))
    chunk=40000
    {
        echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
        for app in default second third; do
            echo "INSERT INTO apps (name, paused, pause_reason, paused_at) VALUES ('$app', 1, 'benchmark', $now)"
            echo "  ON CONFLICT (name) DO UPDATE SET paused = 1;"
        done
        for ((first = 1; first <= MESSAGES; first += chunk)); do
            last=$((first + chunk - 1 < MESSAGES ? first + chunk - 1 : MESSAGES))
            # Message m is app m % 3, created at a pseudo-random time of the last week; its deliveries are the
            # values (m-1)*5+1 .. m*5, their state by value % 20, their last change after the message's creation.
            printf '%s\n' "BEGIN;
INSERT INTO messages (id, app, payload, target_kind, priority, ttl_seconds, dry_run, created_at, expires_at)
  SELECT printf('01CONSOLE%017d', value), CASE value % 3 WHEN 0 THEN 'default' WHEN 1 THEN 'second' ELSE 'third' END,
         '{\"data\":{\"k\":\"v\"}}', 'tokens',
         'normal', 2419200, 0, $base + (value * 7919) % $week, $base + (value * 7919) % $week + 2419200000
  FROM generate_series($first, $last);
INSERT INTO deliveries (message_id, app, token, state, reason, attempts, next_attempt_at, updated_at, last_status,
                        created_at)
  SELECT printf('01CONSOLE%017d', m), CASE m % 3 WHEN 0 THEN 'default' WHEN 1 THEN 'second' ELSE 'third' END,
         printf('%08x:APA91b-token-%d', (value * 2654435761) & 4294967295, value),
         CASE WHEN s < 12 THEN 'delivered' WHEN s < 14 THEN 'dropped' WHEN s < 18 THEN 'queued' ELSE 'dead' END,
         CASE WHEN s < 12 THEN NULL WHEN s < 14 THEN 'NotRegistered' WHEN s < 18 THEN NULL
              ELSE CASE ((value * 2654435761) & 4294967295) % 6
                   WHEN 0 THEN 'InvalidRegistration' WHEN 1 THEN 'MismatchSenderId' WHEN 2 THEN 'MaxAttempts'
                   WHEN 3 THEN 'Expired' WHEN 4 THEN 'INVALID_ARGUMENT'
                   ELSE 'SENDER_ID_MISMATCH' END END,
         CASE WHEN s < 18 AND s >= 14 THEN 0 ELSE 1 END,
         CASE WHEN s = 17 THEN $now + 3600000 ELSE t END,
         min($now, t + (value % 600) * 1000), CASE WHEN s >= 18 THEN 400 WHEN s < 12 THEN 200 ELSE NULL END, t
  FROM (SELECT value, (value - 1) / $PER + 1 AS m, value % 20 AS s,
               $base + (((value - 1) / $PER + 1) * 7919) % $week AS t
        FROM generate_series($(((first - 1) * PER + 1)), $((last * PER))));
COMMIT;"
        done
        echo "INSERT INTO tokens (token, app, user, created_at, updated_at)
  SELECT printf('registered-%d', value), CASE value % 3 WHEN 0 THEN 'default' WHEN 1 THEN 'second' ELSE 'third' END,
         printf('user-%d', value % 50000), $base, $base FROM generate_series(1, 200000);"
        echo "INSERT INTO token_events (at, app, token, kind, replacement, reason, message_id)
  SELECT $base + value * 3000, CASE value % 3 WHEN 0 THEN 'default' WHEN 1 THEN 'second' ELSE 'third' END,
         printf('registered-%d', value), 'deleted', NULL, 'NotRegistered', NULL FROM generate_series(1, 200000);"
        echo "ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);"
    } >"$sql"
    t0=$(now_ms)
    sqlite3 -bail "$DB" <"$sql" >"$WORK/generate.out" 2>&1 || {
        cat "$WORK/generate.out" >&2
        fail "generating the database failed"
    }
    log "generated $(fmt $((MESSAGES * PER))) deliveries in $((($(now_ms) - t0) / 1000)) s: $(du -m "$DB" | cut -f1) MB"
    sqlite3 "$DB" "SELECT app, state, count(*) FROM deliveries GROUP BY 1, 2" | tr '\n' ' ' >&2
    log ""
}

generate
PORT=$(free_port)
"$HERALD" serve --sandbox --db "$DB" --listen "127.0.0.1:$PORT" --api-token "$TOKEN" 2>"$WORK/serve.log" &
HERALD_PID=$!
HERALD_LOG=$WORK/serve.log
for _ in $(seq 1 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$PORT/healthz" 2>/dev/null && break
    sleep 0.1
done
BASE="http://127.0.0.1:$PORT"
AUTH="Authorization: Bearer $TOKEN"

# --- every call ------------------------------------------------------------------------------------------
FAILED=0
printf '| call | median ms | slowest ms |\n|---|---:|---:|\n'
measure() { # label, method, path, [body]
    local label=$1 method=$2 path=$3 body=${4:-} times=() line status seconds
    for _ in 1 2 3 4 5; do
        if [[ -n $body ]]; then
            line=$(curl -sS -o "$WORK/answer" -w '%{http_code} %{time_total}' -X "$method" -H "$AUTH" \
                -H 'Content-Type: application/json' -d "$body" "$BASE$path")
        else
            line=$(curl -sS -o "$WORK/answer" -w '%{http_code} %{time_total}' -X "$method" -H "$AUTH" "$BASE$path")
        fi
        status=${line% *}
        seconds=${line#* }
        [[ $status == 200 ]] || fail "$label: HTTP $status: $(head -c 300 "$WORK/answer")"
        times+=("$(awk -v s="$seconds" 'BEGIN { printf "%.1f", s * 1000 }')")
    done
    local median slowest
    median=$(median "${times[@]}")
    slowest=$(printf '%s\n' "${times[@]}" | sort -g | tail -1)
    printf '| %s | %s | %s |\n' "$label" "$median" "$slowest"
    if awk -v m="$slowest" -v t="$TARGET_MS" 'BEGIN { exit !(m > t) }'; then FAILED=$((FAILED + 1)); fi
}

DEAD_ID=$(sqlite3 "$DB" "SELECT id FROM deliveries WHERE state = 'dead' AND app = 'second' LIMIT 1 OFFSET 1000")
DEAD_TOKEN=$(sqlite3 "$DB" "SELECT token FROM deliveries WHERE id = $DEAD_ID")
MESSAGE_ID=$(sqlite3 "$DB" "SELECT message_id FROM deliveries WHERE id = $DEAD_ID")
# A key deep in the list: the 200,000th dead letter, newest first.
DEEP=$(sqlite3 "$DB" "SELECT updated_at || '.' || id FROM deliveries WHERE state = 'dead'
                      ORDER BY updated_at DESC, id DESC LIMIT 1 OFFSET 200000")

measure "GET /console" GET /console
measure "GET /console/console.js" GET /console/console.js
measure "GET /v1/admin/session" GET /v1/admin/session
measure "GET /v1/admin/overview" GET /v1/admin/overview
measure "GET /v1/admin/dead (first page of 50)" GET "/v1/admin/dead?limit=50"
measure "GET /v1/admin/dead?after= (page at 200,000)" GET "/v1/admin/dead?limit=50&after=$DEEP"
measure "GET /v1/admin/dead?app=second" GET "/v1/admin/dead?app=second&limit=50"
measure "GET /v1/admin/dead?reason=MaxAttempts" GET "/v1/admin/dead?reason=MaxAttempts&limit=50"
measure "GET /v1/admin/dead?app=second&reason=Expired&since=1h" GET \
    "/v1/admin/dead?app=second&reason=Expired&since=1h&limit=50"
measure "GET /v1/admin/dead?token=" GET "/v1/admin/dead?token=$DEAD_TOKEN&limit=50"
measure "GET /v1/admin/dead/summary (all 500,000)" GET "/v1/admin/dead/summary"
measure "GET /v1/admin/dead/summary?app=second&reason=MaxAttempts" GET \
    "/v1/admin/dead/summary?app=second&reason=MaxAttempts"
measure "GET /v1/admin/dead/summary?since=1h" GET "/v1/admin/dead/summary?since=1h"
measure "GET /v1/admin/dead/{id}" GET "/v1/admin/dead/$DEAD_ID"
measure "GET /v1/admin/messages/{id}" GET "/v1/admin/messages/$MESSAGE_ID"
measure "GET /v1/admin/tokens/{token} (registered)" GET "/v1/admin/tokens/registered-4711"
measure "GET /v1/admin/tokens/{token} (a dead letter's)" GET "/v1/admin/tokens/$DEAD_TOKEN"
measure "GET /v1/admin/users/{user}" GET "/v1/admin/users/user-4711"
measure "GET /v1/admin/token-events (latest 100)" GET "/v1/admin/token-events"
measure "GET /v1/admin/token-events?after=100000" GET "/v1/admin/token-events?after=100000"
measure "POST /v1/admin/apps/third/pause" POST /v1/admin/apps/third/pause '{"reason": "benchmark"}'
measure "POST /v1/admin/dead/requeue (ids: 1)" POST /v1/admin/dead/requeue "{\"ids\": [$DEAD_ID]}"
measure "POST /v1/admin/messages/{id}/cancel" POST "/v1/admin/messages/$MESSAGE_ID/cancel" '{}'

# --- requeue all that match, a chunk per request, while ingest goes on --------------------------------------
ingest_loop() { # one message every 20 ms, each timed, until killed
    while :; do
        curl -sS -o /dev/null -w '%{time_total}\n' -H "$AUTH" -H 'Content-Type: application/json' \
            -d '{"to": "bench-ingest", "data": {"k": "v"}}' "$BASE/v1/messages"
        sleep 0.02
    done
}
ingest_loop >"$WORK/ingest-before" &
INGEST_PID=$!
sleep 5
stop_pid "$INGEST_PID" TERM
ingest_loop >"$WORK/ingest-during" &
INGEST_PID=$!
CHUNK=${HERALD_BENCH_CHUNK:-500}
PAUSE=${HERALD_BENCH_PAUSE:-1}
MATCHING=$(sqlite3 "$DB" \
    "SELECT count(*) FROM deliveries WHERE state = 'dead' AND app = 'second' AND reason = 'MaxAttempts'")
UNTIL=$(now_ms)
CHUNKS=()
REQUEUED=0
T0=$(now_ms)
while :; do
    line=$(curl -sS -o "$WORK/answer" -w '%{time_total}' -H "$AUTH" -H 'Content-Type: application/json' \
        -d "{\"filter\": {\"app\": \"second\", \"reason\": \"MaxAttempts\", \"until\": $UNTIL}, \"limit\": $CHUNK}" \
        "$BASE/v1/admin/dead/requeue")
    CHUNKS+=("$(awk -v s="$line" 'BEGIN { printf "%.1f", s * 1000 }')")
    REQUEUED=$((REQUEUED + $(sed -E 's/.*"requeued":([0-9]+).*/\1/' "$WORK/answer")))
    grep -q '"done":true' "$WORK/answer" && break
    # As the page does: a pause as long as the chunk took, so the writer is at most half busy with the requeue.
    ((PAUSE)) && sleep "$line"
done
ELAPSED=$(($(now_ms) - T0))
stop_pid "$INGEST_PID" TERM
INGEST_PID=""
summary() { # file of seconds: "median / p99 / slowest ms (n)"
    sort -g "$1" | awk '{ v[NR] = $1 * 1000 } END {
        if (NR == 0) { print "none"; exit }
        p = int(NR * 0.99); if (p < 1) p = 1
        printf "%.1f / %.1f / %.1f ms (%d)", v[int((NR + 1) / 2)], v[p], v[NR], NR }'
}
PAUSED=""
((PAUSE)) && PAUSED=", pausing as long as each chunk took"
printf '\nrequeue of all %s dead letters of app second, reason MaxAttempts: %s requeued in %s chunks of %s, %s s%s;\n' \
    "$(fmt "$MATCHING")" "$(fmt "$REQUEUED")" "${#CHUNKS[@]}" "$CHUNK" \
    "$(awk -v t="$ELAPSED" 'BEGIN { printf "%.1f", t / 1000 }')" "$PAUSED"
printf 'a chunk: median %s ms, slowest %s ms\n' "$(median "${CHUNKS[@]}")" \
    "$(printf '%s\n' "${CHUNKS[@]}" | sort -g | tail -1)"
printf 'ingest (one message per 20 ms) median / p99 / slowest: before %s; during the requeue %s\n' \
    "$(summary "$WORK/ingest-before")" "$(summary "$WORK/ingest-during")"
[[ $REQUEUED == "$MATCHING" ]] || fail "requeued $REQUEUED of $MATCHING"
if ((FAILED > 0)); then
    log "$FAILED calls were slower than $TARGET_MS ms at least once"
    exit 1
fi
log "every call within $TARGET_MS ms"
