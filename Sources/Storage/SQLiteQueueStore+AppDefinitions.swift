import Queue

extension SQLiteQueueStore {
    // MARK: - Apps stored at run time

    public func appDefinitions() throws -> [AppDefinitionRecord] {
        try connection.query(
            """
            SELECT name, provider, definition, secrets, version, created_at, updated_at FROM apps
            WHERE provider IS NOT NULL ORDER BY name
            """, row: Self.definitionRow)
    }

    public func appDefinitionVersions() throws -> [String: Int64] {
        let rows = try connection.query("SELECT name, version FROM apps WHERE provider IS NOT NULL") { row in
            (row.string(0), row.int64(1))
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    public func putAppDefinition(
        _ record: AppDefinitionRecord
    ) throws -> (stored: AppDefinitionRecord, created: Bool) {
        let created = try connection.queryOne(
            "SELECT provider IS NULL FROM apps WHERE name = ?", [.text(record.name)]) { $0.int(0) != 0 } ?? true
        let stored = try connection.queryOne(
            """
            INSERT INTO apps (name, provider, definition, secrets, version, created_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)
            ON CONFLICT (name) DO UPDATE SET provider = ?2, definition = ?3, secrets = ?4, version = version + 1,
                created_at = CASE WHEN provider IS NULL THEN ?5 ELSE created_at END, updated_at = ?5
            RETURNING name, provider, definition, secrets, version, created_at, updated_at
            """,
            [.text(record.name), .text(record.provider), .text(record.definition), .text(record.secrets),
             .integer(record.updatedAt)], row: Self.definitionRow)
        return (stored ?? record, created)
    }

    public func removeAppDefinition(_ name: String, now: Int64) throws -> Bool {
        try connection.run(
            """
            UPDATE apps SET provider = NULL, definition = NULL, secrets = NULL, version = version + 1, updated_at = ?
            WHERE name = ? AND provider IS NOT NULL
            """, .integer(now), .text(name)) > 0
    }

    private static func definitionRow(_ row: Statement) -> AppDefinitionRecord {
        AppDefinitionRecord(
            name: row.string(0), provider: row.string(1), definition: row.string(2), secrets: row.string(3),
            version: row.int64(4), createdAt: row.int64(5), updatedAt: row.int64(6))
    }
}
