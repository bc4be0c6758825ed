import Foundation
import Testing
import TestSupport

import Queue
@testable import Storage

@Suite struct MessageStoreTests {
    let directory = TemporaryDirectory()
    let writer: DatabaseWriter

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
    }

    private func insert(_ message: NewMessage, now: Int64 = 1_700_000_000_000) throws -> AcceptedMessage {
        try writer.write { try $0.insertMessage(message, now: now) }
    }

    @Test func aMessageGetsOneQueuedDeliveryPerToken() throws {
        let accepted = try insert(NewMessage(
            app: "default", payload: #"{"data":{"a":"b"}}"#, target: .tokens(["t1", "t2", "t3"]),
            collapseKey: "score", priority: .high, ttlSeconds: 60))
        #expect(accepted.deliveries == 3)
        #expect(!accepted.isRepeat)
        let record = try #require(try writer.write { try $0.message(id: accepted.id) })
        #expect(record.payload == #"{"data":{"a":"b"}}"#)
        #expect(record.targetKind == .tokens)
        #expect(record.collapseKey == "score")
        #expect(record.expiresAt == record.createdAt + 60_000)
        #expect(record.deliveries.map(\.token) == ["t1", "t2", "t3"])
        #expect(record.deliveries.allSatisfy { $0.state == .queued && $0.attempts == 0 })
        let ranks = try writer.write {
            try $0.connection.query("SELECT DISTINCT priority_rank FROM deliveries") { $0.int(0) }
        }
        #expect(ranks == [0])
    }

    @Test func aRepeatedIdempotencyKeyReturnsTheFirstMessage() throws {
        let message = NewMessage(app: "default", idempotencyKey: "k-1", payload: "{}", target: .tokens(["a", "b"]))
        let first = try insert(message)
        let second = try insert(message, now: 1_700_000_000_000 + 1000)
        #expect(second == AcceptedMessage(id: first.id, rowID: first.rowID, deliveries: 2, isRepeat: true))
        let count = try writer.write { try $0.connection.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } }
        #expect(count == 2)
    }

    @Test func anIdempotencyKeyOlderThanTheWindowStartsANewMessage() throws {
        let message = NewMessage(app: "default", idempotencyKey: "k-2", payload: "{}", target: .tokens(["a"]))
        let first = try insert(message)
        let later = try insert(message, now: 1_700_000_000_000 + idempotencyWindowMillis + 1)
        #expect(later.id != first.id)
        #expect(!later.isRepeat)
        #expect(later.rowID != first.rowID)
    }

    @Test func theRowIDNamesTheMessage() throws {
        let first = try insert(NewMessage(app: "default", payload: "{}", target: .tokens(["a"])))
        let second = try insert(NewMessage(app: "default", payload: "{}", target: .topic("/topics/news")))
        #expect(first.rowID > 0)
        #expect(second.rowID != first.rowID)
        for accepted in [first, second] {
            let id = try writer.write {
                try $0.connection.queryOne("SELECT id FROM messages WHERE rowid = ?", [.integer(accepted.rowID)]) {
                    $0.string(0)
                }
            }
            #expect(id == accepted.id)
        }
    }

    @Test func usersExpandToTheirRegisteredTokensOfTheSameApp() throws {
        try writer.write { store in
            _ = try store.upsertToken("phone", app: "default", user: "alice", now: 1)
            _ = try store.upsertToken("tablet", app: "default", user: "alice", now: 2)
            _ = try store.upsertToken("other-app", app: "second", user: "alice", now: 3)
            _ = try store.upsertToken("bob-phone", app: "default", user: "bob", now: 4)
        }
        let accepted = try insert(NewMessage(app: "default", payload: "{}", target: .users(["alice", "nobody"])))
        let tokens = try writer.write { try $0.message(id: accepted.id)!.deliveries.map(\.token) }
        #expect(tokens == ["phone", "tablet"])
    }

    @Test func usersExpandInRegistrationOrderAndACollapseKeyMakesEachTheHead() throws {
        try writer.write { store in
            _ = try store.upsertToken("b-first", app: "default", user: "bob", now: 1)
            _ = try store.upsertToken("a-second", app: "default", user: "alice", now: 2)
            _ = try store.upsertToken("c-third", app: "default", user: "bob", now: 3)
            _ = try store.upsertToken("unnamed", app: "default", user: "carol", now: 4)
            _ = try store.upsertToken("no-user", app: "default", user: nil, now: 5)
        }
        let older = try insert(NewMessage(
            app: "default", payload: "{}", target: .tokens(["a-second", "unnamed"]), collapseKey: "score"))
        let accepted = try insert(NewMessage(
            app: "default", payload: "{}", target: .users(["alice", "bob", "nobody"]), collapseKey: "score"))
        #expect(accepted.deliveries == 3)
        let record = try #require(try writer.write { try $0.message(id: accepted.id) })
        #expect(record.deliveries.map(\.token) == ["b-first", "a-second", "c-third"])
        #expect(record.deliveries.allSatisfy { $0.state == .queued })
        let heads = try writer.write {
            try $0.connection.query("SELECT token, message_id, delivery_id FROM collapse_heads ORDER BY token") {
                "\($0.string(0)) \($0.string(1)) \($0.int64(2))"
            }
        }
        let ids = Dictionary(uniqueKeysWithValues: record.deliveries.map { ($0.token, $0.id) })
        let olderUnnamed = try #require(try writer.write { try $0.message(id: older.id) }?.deliveries.last)
        #expect(heads == [
            "a-second \(accepted.id) \(ids["a-second"]!)", "b-first \(accepted.id) \(ids["b-first"]!)",
            "c-third \(accepted.id) \(ids["c-third"]!)", "unnamed \(older.id) \(olderUnnamed.id)",
        ])
    }

    @Test func aMessageToUsersWithoutTokensStoresNoDelivery() throws {
        let accepted = try insert(NewMessage(app: "default", payload: "{}", target: .users(["nobody"])))
        #expect(accepted.deliveries == 0)
        #expect(try writer.write { try $0.message(id: accepted.id) }?.deliveries.isEmpty == true)
    }

    @Test func cancellingDropsOnlyQueuedDeliveries() throws {
        let accepted = try insert(NewMessage(app: "default", payload: "{}", target: .tokens(["a", "b"])))
        try writer.write { _ = try $0.connection.run("UPDATE deliveries SET state = 'delivered' WHERE token = 'a'") }
        let cancelled = try writer.write { try $0.cancelMessage(id: accepted.id, now: 5) }
        #expect(cancelled == 1)
        let states = try writer.write {
            try $0.message(id: accepted.id)!.deliveries.map { "\($0.state)/\($0.reason?.rawValue ?? "")" }
        }
        #expect(states == ["delivered/", "dropped/Cancelled"])
        #expect(try writer.write { try $0.cancelMessage(id: "missing", now: 5) } == nil)
    }
}
