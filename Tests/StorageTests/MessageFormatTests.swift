import Testing
import TestSupport

@testable import Storage

/// `messages.format` (migration 0005) admits only the formats Herald knows. That a message keeps its format and token
/// field from ingest to the claim is `QueueStoreSuite`'s (QueueStoreTests), on every engine.
@Suite struct MessageFormatTests {
    let directory = TemporaryDirectory()

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
