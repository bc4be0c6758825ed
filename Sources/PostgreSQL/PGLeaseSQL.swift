/// The claim and the outcome statements of `PGQueueStore`, written so that their plans do not depend on the
/// statistics: a claim runs hundreds of times a second and an outcome batch thousands, so a plan that reads every
/// row in flight, or the whole table, instead of the rows concerned is the difference between 5,000 sends/s and a
/// few hundred. Tested in `PGLeasePlanTests` under generic and custom plans.
///
/// - The claim locks its rows in a sub-select that walks `deliveries_ready`, and updates them through
///   `id = ANY(ARRAY(…))`: the array is computed first, then each row is found by its primary key. The same
///   statement with `id IN (…)` gets a generic plan (the one a prepared statement settles on) that reads every
///   row of `deliveries` into a hash join, because a `LIMIT $n` is estimated at a tenth of the table.
/// - An outcome finds its row by primary key, and writes it only while the row is in flight under the owner it
///   names. Its state test is written `state || '' = 'inflight'`: the same test as `state = 'inflight'`, but one
///   the planner cannot match with the partial index `deliveries_inflight` (it only matches the predicate's own
///   expression). With `state = 'inflight'` the planner prefers that index whenever the statistics say that
///   nothing is in flight (they were taken while the queue was idle or paused, which is usual), and every outcome
///   read every leased row: about 2,000 of them per statement, once per batch of answers, at full speed.
///
/// Leases run on the lease clock (`PGQueueStore.LeaseClock`): each lease statement takes it as a parameter that is
/// the caller's time, or NULL for the database's own, `databaseNow`.
enum PGLeaseSQL {
    /// The database's clock in Unix milliseconds, the same for every row of a statement.
    static let databaseNow = "(extract(epoch FROM statement_timestamp()) * 1000)::bigint"

    /// Leases: `$1` owner, `$2` lease length (ms), `$3` now, `$4` app, `$5` priority rank, `$6` limit, `$7` lease
    /// clock.
    static let leaseReady = """
        UPDATE deliveries SET state = 'inflight', lease_owner = $1,
            lease_expires_at = coalesce($7::bigint, \(databaseNow)) + $2::bigint, updated_at = $3
        WHERE id = ANY(ARRAY(
            SELECT id FROM deliveries
            WHERE app = $4 AND priority_rank = $5 AND state = 'queued' AND next_attempt_at <= $3
            ORDER BY next_attempt_at LIMIT $6
            FOR UPDATE SKIP LOCKED))
        RETURNING id, message_id, token, attempts, next_attempt_at
        """

    /// One delivered row: `$1` charge, `$2` FCM's message id, `$3` canonical token, `$4` status, `$5` now, `$6` id,
    /// `$7` owner.
    static let markDelivered = """
        UPDATE deliveries SET state = 'delivered', reason = NULL, attempts = attempts + $1, lease_owner = NULL,
            lease_expires_at = NULL, fcm_message_id = $2, canonical_token = $3, last_status = $4, updated_at = $5
        WHERE id = $6 AND state || '' = 'inflight' AND lease_owner = $7
        RETURNING app, token, message_id
        """

    /// Many plain successes, one primary-key look-up per element: `$1` charge, `$2` now, `$3` ids, `$4` FCM's
    /// message ids, `$5` statuses, `$6` owner.
    static let markManyDelivered = """
        UPDATE deliveries AS d SET state = 'delivered', reason = NULL, attempts = d.attempts + $1,
            lease_owner = NULL, lease_expires_at = NULL, fcm_message_id = outcome.fcm_message_id,
            canonical_token = NULL, last_status = outcome.status, updated_at = $2
        FROM unnest($3::bigint[], $4::text[], $5::int[]) AS outcome (id, fcm_message_id, status)
        WHERE d.id = outcome.id AND d.state || '' = 'inflight' AND d.lease_owner = $6
        RETURNING d.id
        """

    /// `dead` or `dropped`: `$1` state, `$2` reason, `$3` charge, `$4` status, `$5` now, `$6` id, `$7` owner.
    static let markEnded = """
        UPDATE deliveries SET state = $1, reason = $2, attempts = attempts + $3, lease_owner = NULL,
            lease_expires_at = NULL, last_status = $4, updated_at = $5
        WHERE id = $6 AND state || '' = 'inflight' AND lease_owner = $7
        RETURNING app, token, message_id
        """

    /// Back to `queued` for a retry: `$1` reason, `$2` charge, `$3` due, `$4` status, `$5` now, `$6` id, `$7` owner.
    static let markRetry = """
        UPDATE deliveries SET state = 'queued', reason = $1, attempts = attempts + $2, next_attempt_at = $3,
            lease_owner = NULL, lease_expires_at = NULL, last_status = $4, updated_at = $5
        WHERE id = $6 AND state || '' = 'inflight' AND lease_owner = $7
        RETURNING app, token, message_id
        """

    /// Back to `queued` uncharged: `$1` now, `$2` id, `$3` owner.
    static let markReleased = """
        UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = $1
        WHERE id = $2 AND state || '' = 'inflight' AND lease_owner = $3
        RETURNING app, token, message_id
        """

    /// Back to `queued` uncharged, due at `$1`, keeping the last error unless `$2` (reason) and `$3` (status) give
    /// one: `$4` now, `$5` id, `$6` owner.
    static let markDeferred = """
        UPDATE deliveries SET state = 'queued', next_attempt_at = $1, reason = coalesce($2, reason),
            last_status = coalesce($3, last_status), lease_owner = NULL, lease_expires_at = NULL, updated_at = $4
        WHERE id = $5 AND state || '' = 'inflight' AND lease_owner = $6
        RETURNING app, token, message_id
        """

    /// Renews `$3`'s leases on the ids `$2` for `$1` ms from `$4`, the lease clock.
    static let renewLeases = """
        UPDATE deliveries SET lease_expires_at = coalesce($4::bigint, \(databaseNow)) + $1::bigint
        WHERE id = ANY($2::bigint[]) AND state || '' = 'inflight' AND lease_owner = $3
        """

    /// Takes back every lease that ran out by `$2`, the lease clock; `$1` now.
    static let rescueExpiredLeases = """
        UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = $1
        WHERE state = 'inflight' AND lease_expires_at <= coalesce($2::bigint, \(databaseNow))
        """
}
