import Foundation
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

/// LISTEN/NOTIFY: how one Herald wakes the others when it queues work.
@Suite struct NotifyTests {
    let database: TestDatabase
    let sender: PGConnection
    let listener: PGConnection

    init() throws {
        database = try TestDatabase()
        sender = try database.connect()
        listener = try database.connect()
        try listener.listen("herald_ready")
    }

    /// Waits for the first notification; the timeout only bounds a broken test, it asserts nothing.
    private func next(_ connection: PGConnection? = nil) throws -> [PGNotification] {
        try (connection ?? listener).notifications(waitingUpTo: 30_000)
    }

    @Test func aNotificationReachesTheOtherConnection() throws {
        try sender.notify("herald_ready", payload: "default")
        let received = try next()
        #expect(received == [
            PGNotification(channel: "herald_ready", payload: "default", senderProcessID: sender.backendProcessID),
        ])
    }

    @Test func aNotificationInATransactionArrivesOnlyWhenItCommits() throws {
        try sender.transaction {
            try sender.notify("herald_ready", payload: "one")
            #expect(try listener.notifications(waitingUpTo: 0).isEmpty)
        }
        #expect(try next().map(\.payload) == ["one"])
    }

    @Test func otherChannelsAreNotReceived() throws {
        try sender.notify("elsewhere", payload: "no")
        try sender.notify("herald_ready", payload: "yes")
        #expect(try next().map(\.payload) == ["yes"])
    }

    @Test func theWakeDescriptorEndsTheWaitWithNothing() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { descriptors.forEach { close($0) } }
        var byte: UInt8 = 1
        #expect(write(descriptors[1], &byte, 1) == 1)
        // Without the descriptor this would wait forever.
        #expect(try listener.notifications(waitingUpTo: -1, wakeDescriptor: descriptors[0]).isEmpty)
    }

    @Test func aLostConnectionIsReportedAndResetListensAgain() throws {
        let pid = listener.backendProcessID
        #expect(try sender.queryOne("SELECT pg_terminate_backend($1)", [.integer(Int64(pid))]) { $0.bool(0) } == true)
        let error = #expect(throws: PGError.self) {
            // Loops until the termination reaches the socket; each call either throws or comes back empty.
            while true { _ = try listener.notifications(waitingUpTo: 30_000) }
        }
        #expect(error?.isConnectionLost == true)
        #expect(error?.isTransient == true)
        #expect(!listener.isConnected)

        try listener.reset()
        #expect(listener.isConnected)
        #expect(listener.backendProcessID != pid)
        try sender.notify("herald_ready", payload: "after reset")
        #expect(try next().map(\.payload) == ["after reset"])
        // Statements are prepared again on the new session.
        #expect(try listener.queryOne("SELECT $1::int + 1", [1]) { $0.int(0) } == 2)
    }

    @Test func aStatementOnALostConnectionFailsAsConnectionLost() throws {
        let victim = try database.connect()
        _ = try victim.queryOne("SELECT 1") { $0.int(0) }
        _ = try sender.queryOne("SELECT pg_terminate_backend($1)", [.integer(Int64(victim.backendProcessID))]) {
            $0.bool(0)
        }
        let error = #expect(throws: PGError.self) {
            // The server may take a moment to close the socket: the first failure is what counts.
            while true { _ = try victim.queryOne("SELECT 1") { $0.int(0) } }
        }
        #expect(error?.isConnectionLost == true)
        #expect(error?.isTransient == true)
    }
}
