import Queue
import Testing

private let t0: Int64 = 1_700_000_000_000

/// Ingest's decisions, alone: what a key already in use means, and what a message's deliveries get.
@Suite struct IngestPolicyTests {
    @Test(arguments: [
        // (stored at, stored fingerprint, now, new fingerprint, verdict)
        (t0, 7 as Int64?, t0 + 1, 7 as Int64, IdempotencyVerdict.repeated),
        (t0, 7, t0 + idempotencyWindowMillis - 1, 7, .repeated),
        (t0, 7, t0 + 1, 8, .conflict),
        (t0, nil, t0 + 1, 8, .repeated),  // stored before fingerprints existed: matches any body, as it did then
        (t0, 7, t0 + idempotencyWindowMillis, 7, .keyExpired),
        (t0, 7, t0 + idempotencyWindowMillis, 8, .keyExpired),
    ])
    func aKeyInUseIsARepeatAConflictOrFreeAgain(
        _ storedAt: Int64, _ stored: Int64?, _ now: Int64, _ fingerprint: Int64, _ verdict: IdempotencyVerdict
    ) {
        let earlier = KeyedMessage(id: "m", rowID: 1, createdAt: storedAt, fingerprint: stored)
        #expect(earlier.verdict(fingerprint: fingerprint, now: now) == verdict)
    }

    @Test func theKeyHorizonIsTheWindowBeforeNow() {
        #expect(idempotencyHorizon(now: t0) == t0 - 24 * 3600 * 1000)
    }

    @Test(arguments: [
        // (ttl, dry run, priority, expires at, lane, collapse head key)
        (0, false, Priority.high, t0 + 5_000, PriorityLane.high, "k" as String?),
        (60, false, .normal, t0 + 60_000, .normal, "k"),
        (60, true, .high, t0 + 60_000, .high, nil),
        (2_419_200, true, .normal, t0 + 2_419_200_000, .normal, nil),
    ])
    func aMessageGetsItsExpiryLaneAndCollapseHeads(
        _ ttl: Int, _ dryRun: Bool, _ priority: Priority, _ expiresAt: Int64, _ lane: PriorityLane, _ head: String?
    ) {
        let message = NewMessage(
            app: "default", payload: "{}", target: .tokens(["a"]), collapseKey: "k", priority: priority,
            ttlSeconds: ttl, dryRun: dryRun)
        let insert = MessageInsert(message, id: "m", fingerprint: nil, createdAt: t0, ttlZeroWindowMillis: 5_000)
        #expect(insert.expiresAt == expiresAt)
        #expect(insert.lane == lane)
        #expect(insert.collapseHeadKey == head)
    }

    @Test func theTTLZeroWindowIsTheStoresSetting() {
        let message = NewMessage(app: "default", payload: "{}", target: .tokens(["a"]), ttlSeconds: 0)
        let insert = MessageInsert(message, id: "m", fingerprint: nil, createdAt: t0, ttlZeroWindowMillis: 1_234)
        #expect(insert.expiresAt == t0 + 1_234)
    }
}

/// What a dead-letter filter means, before any engine writes it as SQL.
@Suite struct DeadLetterFilterTermsTests {
    @Test func noFilterMatchesEveryDeadLetter() {
        #expect(DeadLetterFilter().terms.isEmpty)
    }

    @Test func everyFieldGivenIsOneTermInAFixedOrder() {
        let cursor = DeadLetterCursor(diedAt: t0, deliveryID: 9)
        let filter = DeadLetterFilter(
            app: "default", reason: "MaxAttempts", diedSince: t0 - 10, diedUntil: t0, token: "t", deliveryIDs: [1, 2],
            after: cursor)
        #expect(filter.terms == [
            .app("default"), .reason("MaxAttempts"), .diedSince(t0 - 10), .diedUntil(t0), .token("t"), .after(cursor),
            .deliveryIDs([1, 2]),
        ])
    }
}
