import Foundation
import Queue
import Storage
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport
import TestSupport

private let t0: Int64 = 1_700_000_000_000

/// Wake-ups across Heralds: an insert's notification, heard by `PGListener`. Each test has a database of its own,
/// since notifications reach every listener of a database.
@Suite struct PGListenerTests {
    struct Refused: Error {}

    let database: TestDatabase
    let writer: PGWriter
    let heard = Collected<String>()
    let listener: PGListener

    init() throws {
        database = try TestDatabase()
        writer = try PGWriter(url: database.url)
        listener = try PGListener(url: database.url) { [heard] in heard.append($0) }
    }

    private func close() {
        listener.close()
        writer.close()
    }

    private static func message(_ app: String, target: MessageTarget = .tokens(["a"])) -> NewMessage {
        NewMessage(app: app, payload: "{}", target: target)
    }

    /// Commits an insert for `app` and waits until its notification arrives: everything committed before it has
    /// then been heard too (PostgreSQL delivers notifications in commit order).
    private func mark(_ app: String) throws {
        _ = try writer.write { try $0.insertMessage(Self.message(app), now: t0) }
        eventually("the notification for \(app)") { heard.all.contains(app) }
    }

    @Test func aCommittedInsertWakesItsAppAndARolledBackOneNothing() throws {
        defer { close() }
        // A rolled-back job alone (whole transaction) and one rolled back to its savepoint in a group.
        _ = try? writer.write { store -> Int in
            _ = try store.insertMessage(Self.message("alone-rolled-back"), now: t0)
            throw Refused()
        }
        let gate = WriterGate(writer)
        let done = DispatchGroup()
        for app in ["grouped-rolled-back", "grouped-committed"] {
            done.enter()
            writer.enqueue({ (store: PGQueueStore) in
                _ = try store.insertMessage(Self.message(app), now: t0)
                if app.hasSuffix("rolled-back") { throw Refused() }
            }) { _ in done.leave() }
        }
        gate.open()
        done.wait()
        try mark("end")
        #expect(heard.all == ["grouped-committed", "end"])
    }

    @Test func aGroupOfInsertsToOneAppWakesItOnce() throws {
        defer { close() }
        let gate = WriterGate(writer)
        let done = DispatchGroup()
        for _ in 0..<100 {
            done.enter()
            writer.enqueue({ (store: PGQueueStore) in try store.insertMessage(Self.message("busy"), now: t0) }) { _ in
                done.leave()
            }
        }
        gate.open()
        done.wait()
        try mark("end")
        #expect(heard.all == ["busy", "end"])
    }

    @Test func anInsertThatQueuesNothingWakesNothing() throws {
        defer { close() }
        let accepted = try writer.write {
            try $0.insertMessage(Self.message("nobody", target: .users(["no-such-user"])), now: t0)
        }
        #expect(accepted.deliveries == 0)
        try mark("end")
        #expect(heard.all == ["end"])
    }

    @Test func theListenerReconnectsAndSaysSomethingMayHaveBeenMissed() throws {
        defer { close() }
        try mark("before")
        #expect(try database.terminate(applicationName: "herald-listener") == 1)
        eventually("the listener is back") { heard.all.contains("") }
        try mark("after")
        #expect(heard.all == ["before", "", "after"])
    }

    @Test func closeEndsAListenerWaitingForNotifications() throws {
        writer.close()
        listener.close()  // would hang if the thread were not woken
        listener.close()
        try eventually("the listener's session ended") {
            try database.count(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
                [.text("herald-listener")]) == 0
        }
    }
}
