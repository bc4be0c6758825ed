import Foundation
import Testing
import TestSupport

import Queue
@testable import Storage

private let t0: Int64 = 1_700_000_000_000
private let day: Int64 = 86_400_000

/// The queries behind the admin CLI: status, dead letters, retention, backup and the token listing.
@Suite struct AdminQueryTests {
    let directory = TemporaryDirectory()
    let store: SQLiteQueueStore
    var connection: Connection { store.connection }

    init() throws {
        store = SQLiteQueueStore(connection: try Connection(path: directory.path("herald.db")))
        try connection.execute("PRAGMA journal_mode = WAL")
        try Migrator.migrate(connection)
    }

    // MARK: - Helpers

    /// Stores a message to `tokens` at `now`; returns its id.
    @discardableResult
    private func enqueue(
        _ tokens: [String], app: String = "default", ttl: Int = 2_419_200, idempotencyKey: String? = nil,
        at now: Int64 = t0
    ) throws -> String {
        let message = NewMessage(
            app: app, idempotencyKey: idempotencyKey, payload: "{}", target: .tokens(tokens), ttlSeconds: ttl)
        return try connection.transaction { try store.insertMessage(message, now: now).id }
    }

    /// Puts the delivery to `token` in `state` as of `at` (the way reconciliation would have left it).
    private func finish(
        _ token: String, _ state: String, reason: String? = nil, at: Int64, attempts: Int64 = 3
    ) throws {
        let changed = try connection.run(
            """
            UPDATE deliveries SET state = ?, reason = ?, attempts = ?, updated_at = ?, last_status = 200
            WHERE token = ?
            """,
            .text(state), .optional(reason), .integer(attempts), .integer(at), .text(token))
        #expect(changed == 1, "no delivery to \(token)")
    }

    private func row(_ token: String) throws -> String? {
        try connection.queryOne(
            """
            SELECT state || ' ' || coalesce(reason, '-') || ' ' || attempts || ' ' || next_attempt_at
            FROM deliveries WHERE token = ?
            """,
            [.text(token)]) { $0.string(0) }
    }

    private func messageExists(_ id: String) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM messages WHERE id = ?", [.text(id)]) { _ in true } ?? false
    }

    private func count(_ sql: String) throws -> Int {
        try connection.queryOne(sql) { $0.int(0) } ?? -1
    }

    /// The detail lines of `EXPLAIN QUERY PLAN` that read the deliveries table.
    private func plan(_ sql: String, _ arguments: [SQLValue]) throws -> [String] {
        try connection.query("EXPLAIN QUERY PLAN " + sql, arguments) { $0.string(3) }
            .filter { $0.contains("deliveries") || $0.contains(" d ") || $0.hasSuffix(" d") }
    }

    // MARK: - Status

    @Test func statusCountsTheBacklogInFlightDeadAndWhatFinishedInTheLastMinutePerApp() throws {
        let now = t0 + 10 * 60_000
        try enqueue(["q1", "q2", "later", "run", "ok-old", "ok-new", "gone", "dead-new", "dead-old"], at: t0)
        try enqueue(["s1", "s-ok"], app: "second", at: t0)
        try connection.run("UPDATE deliveries SET next_attempt_at = ? WHERE token = 'later'", .integer(now + 60_000))
        try connection.run(
            "UPDATE deliveries SET state = 'inflight', lease_owner = 'w', lease_expires_at = ? WHERE token = 'run'",
            .integer(now + 30_000))
        try finish("ok-old", "delivered", at: now - 61_000)
        try finish("ok-new", "delivered", at: now - 59_000)
        try finish("gone", "dropped", reason: "NotRegistered", at: now - 1000)
        try finish("dead-new", "dead", reason: "InvalidRegistration", at: now - 2000)
        try finish("dead-old", "dead", reason: "InvalidRegistration", at: now - 5 * 60_000)
        try finish("s-ok", "delivered", at: now - 10)

        let statuses = try connection.snapshot { try store.appStatuses(now: now, lastMinute: true) }
        #expect(statuses.map(\.name) == ["default", "second"])
        let main = statuses[0]
        #expect(main.queued == 3)
        #expect(main.ready == 2)
        #expect(main.oldestReadySince == t0, "q1 and q2 have been due since they were queued")
        #expect(main.inflight == 1)
        #expect(main.dead == 2)
        #expect(main.finishedLastMinute == FinishedCounts(delivered: 1, dead: 1, dropped: 1))
        #expect(!main.paused && main.pauseReason == nil && main.gateUntil == 0)
        let second = statuses[1]
        #expect(second.queued == 1 && second.ready == 1 && second.inflight == 0 && second.dead == 0)
        #expect(second.finishedLastMinute == FinishedCounts(delivered: 1))
    }

    @Test func statusHasNoOldestReadyWhenNothingIsDueYet() throws {
        try enqueue(["a"], at: t0)
        try connection.run("UPDATE deliveries SET next_attempt_at = ?", .integer(t0 + 60_000))
        let status = try #require(try store.appStatuses(now: t0 + 1000, lastMinute: true).first)
        #expect(status.queued == 1 && status.ready == 0 && status.oldestReadySince == nil)
    }

    @Test func statusShowsPausedAndGatedAppsWithReasonAndTimes() throws {
        try enqueue(["a"], at: t0)
        try enqueue(["b"], app: "second", at: t0)
        try store.pauseApp("default", reason: "401 from FCM", now: t0 + 5)
        try store.closeGate("second", until: t0 + 9000, reason: .retryAfter, now: t0 + 6)
        let statuses = try store.appStatuses(now: t0 + 10, lastMinute: true)
        #expect(statuses[0].paused && statuses[0].pauseReason == "401 from FCM" && statuses[0].pausedAt == t0 + 5)
        #expect(!statuses[1].paused && statuses[1].gateUntil == t0 + 9000)
        #expect(statuses[1].gateReason == .retryAfter && statuses[1].gatedAt == t0 + 6)
    }

    @Test func queueDepthCountsEveryAppAndState() throws {
        try enqueue(["a", "b", "c"], at: t0)
        try finish("c", "delivered", at: t0 + 1)
        let depth = try store.queueDepth()
        #expect(depth == [
            QueueDepthRow(app: "default", state: .delivered, count: 1, oldest: t0),
            QueueDepthRow(app: "default", state: .queued, count: 2, oldest: t0),
        ])
    }

    /// "Quick at millions of rows" as a property that can be checked without timing: every status, dead-letter and
    /// retention statement reads deliveries through a partial index (or by id, or one message's rows), never by
    /// scanning the table or an index of every row.
    @Test func adminStatementsReadDeliveriesThroughIndexes() throws {
        let allowed = ["deliveries_ready", "deliveries_inflight", "deliveries_dead", "deliveries_finished",
                       "INTEGER PRIMARY KEY", "deliveries_by_message (message_id=?)"]
        var statements: [(String, [SQLValue])] = [
            (StatusSQL.queued, [.integer(t0), .text("default")]),
            (StatusSQL.inflight, []),
            (StatusSQL.dead, []),
            (StatusSQL.deadSince, [.integer(t0)]),
            (StatusSQL.finishedSince, [.integer(t0)]),
            (RetentionSQL.pruneFinished, [.integer(t0), .integer(10)]),
            (RetentionSQL.countFinished, [.integer(t0)]),
            (RetentionSQL.pruneEmptyMessages, [.text(""), .text("Z"), .integer(t0), .integer(t0)]),
            (RetentionSQL.countDead, []),
            (DeadLetterSQL.deleteEmptyMessage, [.text("m"), .integer(t0)]),
        ]
        let filters = [
            DeadLetterFilter(), DeadLetterFilter(app: "default"), DeadLetterFilter(reason: "MaxAttempts"),
            DeadLetterFilter(diedSince: t0), DeadLetterFilter(app: "default", reason: "MaxAttempts", diedSince: t0),
            DeadLetterFilter(deliveryIDs: [1, 2]),
            DeadLetterFilter(app: "default", diedUntil: t0, after: DeadLetterCursor(diedAt: t0, deliveryID: 9)),
            DeadLetterFilter(token: "t"),
        ]
        for filter in filters {
            let (condition, arguments) = filter.sql
            statements += [
                (DeadLetterSQL.list(condition), arguments + [.integer(10)]),
                (DeadLetterSQL.groups(condition), arguments),
                (DeadLetterSQL.expired(condition), arguments + [.integer(t0)]),
                (DeadLetterSQL.requeue(condition),
                 [.integer(t0), .integer(t0)] + arguments + [.integer(t0), .integer(10)]),
                (DeadLetterSQL.purge(condition), arguments + [.integer(10)]),
            ]
        }
        for (sql, arguments) in statements {
            let lines = try plan(sql, arguments)
            #expect(!lines.isEmpty, "no plan for \(sql)")
            for line in lines {
                #expect(allowed.contains(where: line.contains), "\(line) — in the plan of: \(sql)")
            }
        }
    }

    /// The console's token page reads a token's events through its index, never the whole feed by id.
    @Test func aTokensEventsAreReadThroughItsIndex() throws {
        let lines = try connection.query("EXPLAIN QUERY PLAN " + TokenEventSQL.ofToken,
                                         [.text("default"), .text("t"), .integer(50)]) { $0.string(3) }
        #expect(lines.contains { $0.contains("token_events_by_app_token (app=? AND token=?)") }, "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("SCAN token_events") }, "\(lines)")
    }

    // MARK: - Dead letters

    @Test func deadLettersFilterByAppReasonTimeAndIdNewestFirst() throws {
        try enqueue(["a", "b", "c"], at: t0)
        try enqueue(["x"], app: "second", at: t0)
        try finish("a", "dead", reason: "InvalidRegistration", at: t0 + 1000)
        try finish("b", "dead", reason: "MismatchSenderId", at: t0 + 2000)
        try finish("c", "delivered", at: t0 + 3000)
        try finish("x", "dead", reason: "InvalidRegistration", at: t0 + 4000)

        func tokens(_ filter: DeadLetterFilter, limit: Int = 10) throws -> [String] {
            try store.deadLetters(filter, limit: limit).map(\.token)
        }
        #expect(try tokens(DeadLetterFilter()) == ["x", "b", "a"])
        #expect(try tokens(DeadLetterFilter(), limit: 2) == ["x", "b"])
        #expect(try tokens(DeadLetterFilter(app: "default")) == ["b", "a"])
        #expect(try tokens(DeadLetterFilter(reason: "InvalidRegistration")) == ["x", "a"])
        #expect(try tokens(DeadLetterFilter(diedSince: t0 + 2000)) == ["x", "b"])
        let filter = DeadLetterFilter(app: "default", reason: "InvalidRegistration")
        let a = try #require(try store.deadLetters(filter, limit: 10).first)
        #expect(a.token == "a" && a.attempts == 3 && a.lastStatus == 200 && a.diedAt == t0 + 1000)
        #expect(try store.deadLetter(id: a.deliveryID) == a)
        let delivered = try #require(try connection.queryOne("SELECT id FROM deliveries WHERE token = 'c'") {
            $0.int64(0)
        })
        #expect(try store.deadLetter(id: delivered) == nil, "a delivered row is not a dead letter")
        #expect(try store.deadLetterGroups(DeadLetterFilter()) == [
            DeadLetterGroup(app: "default", reason: .invalidRegistration, count: 1),
            DeadLetterGroup(app: "default", reason: .mismatchSenderID, count: 1),
            DeadLetterGroup(app: "second", reason: .invalidRegistration, count: 1),
        ])
    }

    @Test func requeueMakesDeadLettersQueuedWithNoAttemptsDueNowAndSkipsExpiredMessages() throws {
        let now = t0 + 120_000
        try enqueue(["fresh"], at: t0)
        try enqueue(["stale"], ttl: 60, at: t0)
        try enqueue(["prompt"], ttl: 0, at: t0)
        try enqueue(["ok"], at: t0)
        try finish("fresh", "dead", reason: "MismatchSenderId", at: t0 + 1)
        try finish("stale", "dead", reason: "MismatchSenderId", at: t0 + 1)
        try finish("prompt", "dead", reason: "MismatchSenderId", at: t0 + 1)
        try finish("ok", "delivered", at: t0 + 1)

        let filter = DeadLetterFilter()
        #expect(try store.expiredDeadLetterCount(filter, now: now) == 2)
        #expect(try connection.transaction { try store.requeueDeadLetters(filter, now: now, limit: 100) } == 1)
        #expect(try row("fresh") == "queued - 0 \(now)")
        #expect(try row("prompt") == "dead MismatchSenderId 3 \(t0)", "TTL 0 is now or never: not revived")
        #expect(try row("stale") == "dead MismatchSenderId 3 \(t0)", "its TTL ran out: it would only expire again")
        #expect(try row("ok")?.hasPrefix("delivered") == true)
        #expect(try store.requeueDeadLetters(filter, now: now, limit: 100) == 0)
    }

    @Test func requeueGoesInBoundedBatchesAndHonoursTheFilter() throws {
        try enqueue(["a1", "a2", "a3", "b1"], at: t0)
        for token in ["a1", "a2", "a3"] { try finish(token, "dead", reason: "InvalidRegistration", at: t0 + 1) }
        try finish("b1", "dead", reason: "MaxAttempts", at: t0 + 1)
        let filter = DeadLetterFilter(reason: "InvalidRegistration")
        #expect(try store.requeueDeadLetters(filter, now: t0 + 2, limit: 2) == 2)
        #expect(try store.requeueDeadLetters(filter, now: t0 + 2, limit: 2) == 1)
        #expect(try store.requeueDeadLetters(filter, now: t0 + 2, limit: 2) == 0)
        #expect(try row("b1") == "dead MaxAttempts 3 \(t0)")
    }

    @Test func purgeDeletesDeadLettersAndOnlyTheMessagesLeftEmpty() throws {
        let alone = try enqueue(["dead-alone"], at: t0)
        let shared = try enqueue(["dead-shared", "still-queued"], at: t0)
        let keyed = try enqueue(["dead-keyed"], idempotencyKey: "k", at: t0 + 10 * day)
        try finish("dead-alone", "dead", reason: "InvalidRegistration", at: t0 + 1)
        try finish("dead-shared", "dead", reason: "InvalidRegistration", at: t0 + 1)
        try finish("dead-keyed", "dead", reason: "InvalidRegistration", at: t0 + 10 * day + 1)

        let purged = try connection.transaction {
            try store.purgeDeadLetters(DeadLetterFilter(), now: t0 + 10 * day + 2, limit: 100)
        }
        #expect(purged.deliveries == 3)
        #expect(purged.messages == 1)
        #expect(try !messageExists(alone))
        #expect(try messageExists(shared), "its other delivery is still queued")
        #expect(try messageExists(keyed), "its idempotency key still answers for 24 h")
        #expect(try count("SELECT count(*) FROM deliveries WHERE state = 'dead'") == 0)
        #expect(try row("still-queued")?.hasPrefix("queued") == true)
    }

    @Test func purgeWithAFilterLeavesOtherDeadLetters() throws {
        try enqueue(["a", "b"], at: t0)
        try finish("a", "dead", reason: "InvalidRegistration", at: t0 + 1)
        try finish("b", "dead", reason: "MaxAttempts", at: t0 + 1)
        let purged = try store.purgeDeadLetters(DeadLetterFilter(reason: "MaxAttempts"), now: t0 + 2, limit: 100)
        #expect(purged.deliveries == 1 && purged.messages == 0)
        #expect(try row("a") == "dead InvalidRegistration 3 \(t0)")
    }

    // MARK: - Retention

    @Test func pruneDeletesOldDeliveredAndDroppedButNeverDeadLettersOrTheirMessages() throws {
        let now = t0 + 30 * day
        let cutoff = now - 7 * day
        let old = try enqueue(["old-ok", "old-gone"], at: t0)
        let withDead = try enqueue(["old-ok-2", "old-dead"], at: t0)
        let recent = try enqueue(["new-ok"], at: t0)
        let pending = try enqueue(["old-queued", "old-ok-3"], at: t0)
        try finish("old-ok", "delivered", at: t0 + 1)
        try finish("old-gone", "dropped", reason: "NotRegistered", at: t0 + 1)
        try finish("old-ok-2", "delivered", at: t0 + 1)
        try finish("old-dead", "dead", reason: "InvalidRegistration", at: t0 + 1)
        try finish("new-ok", "delivered", at: now - day)
        try finish("old-ok-3", "delivered", at: t0 + 1)

        #expect(try store.finishedDeliveryCount(updatedBefore: cutoff) == 4)
        #expect(try store.pruneFinishedDeliveries(updatedBefore: cutoff, limit: 3) == 3)
        #expect(try store.pruneFinishedDeliveries(updatedBefore: cutoff, limit: 3) == 1)
        #expect(try store.pruneFinishedDeliveries(updatedBefore: cutoff, limit: 3) == 0)
        let pruned = try store.pruneEmptyMessages(createdBefore: cutoff, now: now, after: "", limit: 100)
        #expect(pruned.deleted == 1)
        #expect(pruned.next == nil)

        #expect(try !messageExists(old))
        #expect(try messageExists(withDead), "a dead letter keeps its message")
        #expect(try row("old-dead") == "dead InvalidRegistration 3 \(t0)")
        #expect(try messageExists(recent))
        #expect(try row("new-ok")?.hasPrefix("delivered") == true)
        #expect(try messageExists(pending))
        #expect(try row("old-queued")?.hasPrefix("queued") == true)
        #expect(try store.deadLetterCount() == 1)
    }

    @Test func pruneSweepsMessagesThatNeverHadDeliveriesPageByPage() throws {
        let now = t0 + 30 * day
        let cutoff = now - 7 * day
        let empty = try (0..<5).map { _ in
            try connection.transaction {
                let message = NewMessage(app: "default", payload: "{}", target: .users(["nobody"]))
                return try store.insertMessage(message, now: t0).id
            }
        }
        let keyed = try connection.transaction {
            try store.insertMessage(
                NewMessage(app: "default", idempotencyKey: "k", payload: "{}", target: .users(["nobody"])), now: t0).id
        }
        let young = try enqueue(["later"], at: now)
        try finish("later", "delivered", at: now)

        var cursor: String? = ""
        var deleted = 0
        var pages = 0
        while let after = cursor {
            // Half a day after t0: the keyed message is still inside its idempotency window.
            let page = try store.pruneEmptyMessages(
                createdBefore: cutoff, now: t0 + day / 2, after: after, limit: 2)
            deleted += page.deleted
            cursor = page.next
            pages += 1
        }
        #expect(deleted == 5)
        #expect(pages == 4, "pages of 2 over 7 messages, stopping at the first created after the cutoff")
        #expect(try empty.allSatisfy { try !messageExists($0) })
        #expect(try messageExists(keyed), "its idempotency key still answers")
        #expect(try messageExists(young))
    }

    // MARK: - Backup

    @Test func backupWritesAPrivateConsistentCopyAndRefusesAnExistingFile() throws {
        try enqueue(["a", "b"], at: t0)
        _ = try store.upsertToken("a", app: "default", user: "u", now: t0)
        let path = directory.path("copy.db")
        let bytes = try connection.backup(to: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((attributes[.size] as? Int).map(Int64.init) == bytes)

        let copy = try Connection(path: path, mode: .readOnly)
        #expect(try copy.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } == 2)
        #expect(try copy.queryOne("SELECT count(*) FROM tokens") { $0.int(0) } == 1)
        #expect(try copy.queryOne("PRAGMA integrity_check") { $0.string(0) } == "ok")

        #expect(throws: BackupError.self) { try connection.backup(to: path) }
        #expect(try copy.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } == 2, "the first copy is untouched")
    }

    // MARK: - Tokens

    @Test func tokensListFiltersByAppAndUserInTokenOrderAndPages() throws {
        let registry = [("c", "default", "u1"), ("a", "default", "u1"), ("b", "default", nil), ("d", "second", "u1")]
        for (token, app, user) in registry {
            _ = try store.upsertToken(token, app: app, user: user, now: t0)
        }
        #expect(try store.tokens(app: nil, user: nil, after: nil, limit: 10).map(\.token) == ["a", "b", "c", "d"])
        #expect(try store.tokens(app: "default", user: nil, after: nil, limit: 10).map(\.token) == ["a", "b", "c"])
        #expect(try store.tokens(app: nil, user: "u1", after: nil, limit: 10).map(\.token) == ["a", "c", "d"])
        #expect(try store.tokens(app: "default", user: "u1", after: "a", limit: 10).map(\.token) == ["c"])
        #expect(try store.tokens(app: nil, user: nil, after: nil, limit: 2).map(\.token) == ["a", "b"])
    }
}
