#!/usr/bin/env bash
# What the SQLite writer spends per token of HMS's drain (Benchmarks/hms.sh), and what each index the drain keeps
# adds to it, by instruction count (valgrind's callgrind), which the machine's load does not change.
#
# The writer's statements of a drain, replayed with the sqlite3 shell on the same libsqlite3 against a backlog of
# HERALD_BENCH_MESSAGES 1000-token messages made as hms.sh makes it (`herald migrate`, the same rows): for every
# claim of 4000 deliveries (AppScheduler.requestsPerClaim requests of 1000) in a transaction, SQLiteQueueStore's
# leaseReady (the SELECT on `deliveries_ready`, then the UPDATE to 'inflight' over the ids' range); then, in
# another, its markDelivered of the four requests (one UPDATE per request over its range, under its request id) and
# recordOutcomes (the feed's INSERT ... SELECT). The shell adds its own small cost per statement, not per row.
# The same replay runs on copies of the backlog without one of the indexes each, without the feed's rows, and without
# all of those (what the rows' own rewrites cost); each line says how many instructions a token that is, and how many
# fewer than as the schema is. Nothing of Herald runs but `herald migrate`: this is the database's share alone,
# ~88 % of the writer's (HERALD_BENCH_BINARY=Benchmarks/callgrind-serve.sh with hms.sh counts the whole writer).
#
# Usage, from the repository root (needs valgrind and sqlite3; installs valgrind as root when missing):
#   Benchmarks/hms-writer.sh
# Environment (all optional):
#   HERALD_BENCH_MESSAGES=40      1000-token messages replayed (claims of 4000: a multiple of 4)
#   HERALD_BENCH_SKIP_BUILD=1     use the existing .build/release/herald
#   HERALD_BENCH_KEEP=1           keep the work directory
set -euo pipefail
export LC_ALL=C

# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"

bench_settings MESSAGES=40
((MESSAGES % 4 == 0)) || fail "HERALD_BENCH_MESSAGES must be a multiple of 4 (claims of four messages)"
TOKENS=$((MESSAGES * 1000))
standin_run # no stand-in here: the cleanup of the work directory and the child (run_sqlite's)
command -v valgrind >/dev/null || { need_root valgrind && install_package valgrind; }
bench_tools sqlite3 valgrind
build_herald
make_work hms-writer

TEMPLATE=$WORK/template.db
log "preloading $MESSAGES messages of 1000 tokens"
hms_backlog "$TEMPLATE" "$MESSAGES"

# The statements, as SQLiteQueueStore writes them (a lease owner and request ids of the lengths Herald uses); with
# "no-feed", without the feed's INSERTs.
replay() { # $1 feed | no-feed
    local claim first request now=$(($(now_ms) + 60000)) owner=0b4c7e1e-2f0a-4a43-9d51-6a8f7a1f3c22
    echo "PRAGMA synchronous = OFF;"
    for ((claim = 0; claim < MESSAGES / 4; claim++)); do
        first=$((claim * 4000 + 1))
        cat <<SQL
BEGIN IMMEDIATE;
SELECT count(*) FROM (SELECT id, message_id, token, attempts FROM deliveries
    WHERE app = 'huawei' AND priority_rank = 1 AND state = 'queued' AND next_attempt_at <= $now
    ORDER BY next_attempt_at LIMIT 4000);
UPDATE deliveries SET state = 'inflight', lease_owner = '$owner', lease_expires_at = $((now + 120000)), updated_at = $now
    WHERE id BETWEEN $first AND $((first + 3999)) AND state = 'queued';
COMMIT;
BEGIN IMMEDIATE;
SQL
        for ((request = first; request < first + 4000; request += 1000)); do
            cat <<SQL
UPDATE deliveries SET state = 'delivered', reason = NULL, attempts = attempts + 1, lease_owner = NULL,
    lease_expires_at = NULL, fcm_message_id = '$((now + request))001230000000', canonical_token = NULL,
    last_status = 200, updated_at = $((now + 30))
    WHERE id BETWEEN $request AND $((request + 999)) AND state = 'inflight' AND lease_owner = '$owner';
SQL
            [[ $1 == feed ]] || continue
            cat <<SQL
INSERT INTO outcomes (at, delivery_id, message_id, app, token, user, state, reason, provider_message_id)
    SELECT d.updated_at, d.id, d.message_id, d.app, d.token, d.user, d.state, d.reason, d.fcm_message_id
    FROM deliveries AS d WHERE id BETWEEN $request AND $((request + 999));
SQL
        done
        echo "COMMIT;"
    done
}
replay feed >"$WORK/replay.sql"
replay no-feed >"$WORK/replay-no-feed.sql"

# Instructions a token of the replay $3 on a copy of the backlog changed by the SQL $2; $1 names the line.
measure() { # $1 label, $2 SQL applied first, $3 replay file
    local db=$WORK/variant.db total
    cp "$TEMPLATE" "$db"
    rm -f "$db-wal" "$db-shm"
    [[ -n $2 ]] && sqlite3 "$db" "$2"
    run_sqlite "$db" "$3" "the replay ($1)" valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out"
    total=$(awk '/^totals:/ { print $2 }' "$WORK/callgrind.out")
    [[ $(sqlite3 "$db" "SELECT count(*) FROM deliveries WHERE state = 'delivered'") == "$TOKENS" ]] ||
        fail "the replay did not deliver every token ($1)"
    echo $((total / TOKENS))
}

DEAD="DROP INDEX deliveries_dead; DROP INDEX deliveries_dead_by_app; DROP INDEX deliveries_dead_by_token;"
ALL="DROP INDEX deliveries_inflight; DROP INDEX deliveries_finished; $DEAD DROP INDEX outcomes_by_app;"
printf '%-52s %18s %12s\n' "schema" "instructions/token" "fewer"
base=$(measure "as is" "" "$WORK/replay.sql")
printf '%-52s %18s %12s\n' "as is" "$(fmt "$base")" "-"
while IFS='|' read -r label sql replay; do
    value=$(measure "$label" "$sql" "$WORK/$replay")
    printf '%-52s %18s %12s\n' "$label" "$(fmt "$value")" "$(fmt $((base - value)))"
done <<EOF
without deliveries_inflight|DROP INDEX deliveries_inflight;|replay.sql
without deliveries_finished|DROP INDEX deliveries_finished;|replay.sql
without the three dead-letter indexes|$DEAD|replay.sql
without outcomes_by_app|DROP INDEX outcomes_by_app;|replay.sql
without the feed's rows|DROP INDEX outcomes_by_app;|replay-no-feed.sql
without all of these (the rows' own rewrites)|$ALL|replay-no-feed.sql
EOF
