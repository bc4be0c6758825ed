import Testing
import TestSupport

import Queue
@testable import Storage

/// `messages.format` and `messages.token_field` (migration 0005): stored as given, read back by the claim, the
/// message view, and plain SQL.
@Suite struct MessageFormatTests {
    let directory = TemporaryDirectory()

    @Test func formatAndTokenFieldTravelFromIngestToTheClaim() throws {
        let connection = try Connection(path: directory.path("herald.db"))
        try Migrator.migrate(connection)
        let store = SQLiteQueueStore(connection: connection)
        let now: Int64 = 1_700_000_000_000
        let v1 = try store.insertMessage(NewMessage(
            app: "default", payload: #"{"android":{"ttl":"60s"}}"#, format: .v1, target: .tokens(["fid-1"]),
            tokenField: .fid, ttlSeconds: 60), now: now)
        let legacy = try store.insertMessage(NewMessage(
            app: "default", payload: #"{"data":{"a":"b"}}"#, target: .tokens(["tok-1"])), now: now)

        let claimed = try store.claim(app: "default", limit: 10, owner: "w", leaseMillis: 60_000, now: now)
        #expect(claimed.messages[v1.id]?.format == .v1)
        #expect(claimed.messages[v1.id]?.tokenField == .fid)
        #expect(claimed.messages[legacy.id]?.format == .legacy)
        #expect(claimed.messages[legacy.id]?.tokenField == .token)
        #expect(try store.message(id: v1.id)?.format == .v1)
        let rows = try connection.query("SELECT format, token_field FROM messages ORDER BY rowid") {
            "\($0.string(0))/\($0.string(1))"
        }
        #expect(rows == ["v1/fid", "legacy/token"])
    }

    @Test func theSchemaRefusesAnUnknownFormat() throws {
        let connection = try Connection(path: directory.path("herald.db"))
        try Migrator.migrate(connection)
        #expect(throws: SQLiteError.self) {
            try connection.run("""
                INSERT INTO messages (id, app, payload, target_kind, priority, ttl_seconds, created_at, expires_at,
                                      format)
                VALUES ('m', 'default', '{}', 'tokens', 'normal', 0, 0, 0, 'xml')
                """)
        }
    }
}
