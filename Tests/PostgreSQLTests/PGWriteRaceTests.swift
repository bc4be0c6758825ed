import Foundation
import Queue
import Storage
import Synchronization
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

private let t0: Int64 = 1_700_000_000_000

/// Writes that race on one database from two places at once. Dead-letter commands (an operator on each of two Herald
/// hosts): a batch that had picked a row another transaction changed meanwhile leaves it unless it is still dead. A
/// cancel and a claim (`DELETE /v1/messages/{id}` on one Herald, another's claimer): a cancelled delivery is never
/// leased, and one leased first is left to its send.
@Suite struct PGWriteRaceTests {
    let schema: PGTestSchema

    init() throws { schema = try PGTestSchema() }

    @Test func aRequeueWaitingOnARowAnotherRequeueTookLeavesIt() throws {
        let (first, second) = (try store(), try store())
        try deadLetter(first)
        let (requeued, answer) = try schema.whileHolding(
            first, { try $0.requeueDeadLetters(DeadLetterFilter(), now: t0 + 5, limit: 10) },
            second, { try $0.requeueDeadLetters(DeadLetterFilter(), now: t0 + 9, limit: 10) })
        #expect(requeued == 1)
        #expect(try answer.get() == 0, "the row was queued by the time the second requeue could lock it")
        #expect(try row(first) == "queued \(t0 + 5)", "not reset a second time (as it would be after a claim)")
    }

    @Test func aPurgeWaitingOnARowARequeueTookLeavesIt() throws {
        let (first, second) = (try store(), try store())
        try deadLetter(first)
        let (requeued, answer) = try schema.whileHolding(
            first, { try $0.requeueDeadLetters(DeadLetterFilter(), now: t0 + 5, limit: 10) },
            second, { try $0.purgeDeadLetters(DeadLetterFilter(), now: t0 + 9, limit: 10) })
        #expect(requeued == 1)
        let purged = try answer.get()
        #expect(purged.deliveries == 0 && purged.messages == 0)
        #expect(try row(first) == "queued \(t0 + 5)")
    }

    @Test func aCancelWaitingOnAClaimLeavesTheLeasedRows() throws {
        let (claimer, canceller) = (try store(), try store())
        let id = try claimer.write {
            try $0.insertMessage(NewMessage(app: "default", payload: "{}", target: .tokens(["a"])), now: t0).id
        }
        let (claimed, answer) = try schema.whileHolding(
            claimer, { try $0.claim(app: "default", limit: 10, owner: "w", leaseMillis: 60_000, now: t0 + 1) },
            canceller, { try $0.cancelMessage(id: id, now: t0 + 2) })
        #expect(claimed.deliveries.count == 1)
        #expect(try answer.get() == 0, "the row was in flight by the time the cancel could lock it")
        #expect(try row(claimer)?.hasPrefix("inflight") == true)
    }

    @Test func aClaimDuringACancelSkipsTheRowsAndFindsThemDropped() throws {
        let (canceller, claimer) = (try store(), try store())
        let id = try canceller.write {
            try $0.insertMessage(NewMessage(app: "default", payload: "{}", target: .tokens(["a"])), now: t0).id
        }
        let during = try canceller.write { store in
            #expect(try store.cancelMessage(id: id, now: t0 + 1) == 1)
            // Its row is locked by the cancel, not yet committed: SKIP LOCKED passes it over rather than wait.
            return try claimer.write {
                try $0.claim(app: "default", limit: 10, owner: "w", leaseMillis: 60_000, now: t0 + 2)
            }
        }
        #expect(during.deliveries.isEmpty)
        let after = try claimer.write {
            try $0.claim(app: "default", limit: 10, owner: "w", leaseMillis: 60_000, now: t0 + 3)
        }
        #expect(after.deliveries.isEmpty)
        #expect(try row(claimer)?.hasPrefix("dropped") == true)
    }

    // MARK: - Helpers

    private func store() throws -> PGQueueStore {
        let connection = try schema.connect()
        // A statement that never got its lock would hang the test forever; fail instead.
        try connection.execute("SET lock_timeout = '30s'")
        return PGQueueStore(connection: connection)
    }

    /// One message to one token, its delivery dead.
    private func deadLetter(_ store: PGQueueStore) throws {
        try store.write {
            _ = try $0.insertMessage(NewMessage(app: "default", payload: "{}", target: .tokens(["a"])), now: t0)
            try $0.connection.run(
                "UPDATE deliveries SET state = 'dead', reason = 'MismatchSenderId', updated_at = $1", .integer(t0 + 1))
        }
    }

    private func row(_ store: PGQueueStore) throws -> String? {
        try store.connection.queryOne("SELECT state || ' ' || CAST(next_attempt_at AS TEXT) FROM deliveries") {
            $0.string(0)
        }
    }
}
