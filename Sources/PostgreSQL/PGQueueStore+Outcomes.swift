import Queue
import Support

extension PGQueueStore {
    // MARK: - Outcome feed

    /// The outcome feed's lock: a transaction-scoped advisory lock that every transaction writing outcomes holds from
    /// before its first outcome until it commits, so that seqs are taken, and become visible, in commit order across
    /// instances. A seq is drawn when a row is written, not when it commits: without the lock, a reader could see
    /// seq 8 committed while seq 7 still waits to commit, move its cursor past 7, and never see it.
    ///
    /// The writer's groups that may end deliveries take it first, before any row (`PGGroupCommitter.begin`), so that
    /// no transaction waits for it while holding rows another holder of it wants; the `outcome_recorded` trigger
    /// takes it again for every outcome (a no-op in a transaction that holds it), which covers every other writer
    /// (`herald` commands) at the cost of taking it after their rows. Its key is "outcome" in ASCII, as in
    /// `migrations/postgres/0013_outcomes.sql`.
    static let lockOutcomeFeed = PGStatement("SELECT pg_advisory_xact_lock($1)", [.integer(0x6f7574636f6d65)])

    /// Outcomes after `after` in seq order, which is commit order (`lockOutcomeFeed`).
    public func outcomes(after: Int64, app: String?, limit: Int) throws -> [OutcomeRecord] {
        guard let app else {
            return try connection.query(
                "\(Self.outcomeColumns) WHERE seq > $1 ORDER BY seq LIMIT $2",
                [.integer(after), .integer(Int64(limit))], row: Self.outcome)
        }
        return try connection.query(
            "\(Self.outcomeColumns) WHERE app = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            [.text(app), .integer(after), .integer(Int64(limit))], row: Self.outcome)
    }

    public func pruneOutcomes(before cutoff: Int64, limit: Int) throws -> Int {
        try connection.run(
            """
            DELETE FROM outcomes WHERE seq IN (
                SELECT seq FROM (SELECT seq, at FROM outcomes ORDER BY seq LIMIT $1) AS oldest WHERE at < $2)
            """, .integer(Int64(limit)), .integer(cutoff))
    }

    private static let outcomeColumns = """
        SELECT seq, at, message_id, app, token, "user", state, reason, provider_message_id FROM outcomes
        """

    private static func outcome(_ row: PGRow) -> OutcomeRecord {
        OutcomeRecord(
            seq: row.int64(0), at: row.int64(1), messageID: row.string(2), app: row.string(3), token: row.string(4),
            user: row.optionalString(5), state: DeliveryState(stored: row.string(6)),
            reason: row.optionalString(7).map(DeliveryReason.init(stored:)), providerMessageID: row.optionalString(8))
    }

    // MARK: - Outcome webhooks

    public func outcomeWebhooks() throws -> [OutcomeWebhookState] {
        try connection.query(
            """
            SELECT name, seq, in_flight, lease_owner, lease_expires_at, skipped, updated_at, last_error, last_error_at FROM outcome_webhooks
            ORDER BY name
            """, row: Self.webhook)
    }

    /// The lease is on the callers' clocks (unlike the deliveries' leases): a webhook is sent by one instance at a
    /// time, and instances whose clocks disagree by less than the lease only ever wait longer for a dead one.
    public func leaseOutcomeWebhook(_ name: String, owner: String, until: Int64, now: Int64) throws
        -> OutcomeWebhookState?
    {
        try connection.run(
            """
            INSERT INTO outcome_webhooks (name, seq, updated_at)
            SELECT $1, coalesce(max(seq), 0), $2 FROM outcomes
            ON CONFLICT (name) DO NOTHING
            """, .text(name), .integer(now))
        return try connection.query(
            """
            UPDATE outcome_webhooks SET lease_owner = $1, lease_expires_at = $2
            WHERE name = $3 AND (lease_owner IS NULL OR lease_owner = $1 OR lease_expires_at <= $4)
            RETURNING name, seq, in_flight, lease_owner, lease_expires_at, skipped, updated_at, last_error, last_error_at
            """, [.text(owner), .integer(until), .text(name), .integer(now)], row: Self.webhook
        ).first
    }

    public func saveOutcomeWebhook(
        _ name: String, owner: String, seq: Int64, inFlight: [Int64], skipped: Int64, lastError: String?,
        until: Int64, now: Int64
    ) throws -> Bool {
        try connection.run(
            """
            UPDATE outcome_webhooks SET seq = $1, in_flight = $2, skipped = skipped + $3, lease_expires_at = $4,
                updated_at = $5, last_error = coalesce($8, last_error),
                last_error_at = CASE WHEN $8::text IS NULL THEN last_error_at ELSE $5 END
            WHERE name = $6 AND lease_owner = $7
            """, .integer(seq), .text(OutcomeWebhookState.stored(inFlight: inFlight)), .integer(skipped),
            .integer(until), .integer(now), .text(name), .text(owner), .optional(lastError)) > 0
    }

    private static func webhook(_ row: PGRow) -> OutcomeWebhookState {
        OutcomeWebhookState(
            name: row.string(0), seq: row.int64(1), inFlight: OutcomeWebhookState.inFlight(stored: row.string(2)),
            leaseOwner: row.optionalString(3), leaseExpiresAt: row.optionalInt64(4), skipped: row.int64(5),
            updatedAt: row.int64(6), lastError: row.optionalString(7), lastErrorAt: row.optionalInt64(8))
    }
}
