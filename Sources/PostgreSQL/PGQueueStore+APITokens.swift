import Queue

// Per-tenant API tokens on PostgreSQL, with the semantics of SQLite's (`SQLiteQueueStore+APITokens.swift`).
extension PGQueueStore {
    public func insertAPIToken(_ token: APITokenRecord) throws {
        try connection.run(
            """
            INSERT INTO api_tokens (id, secret_sha256, name, role, apps, created_at) VALUES ($1, $2, $3, $4, $5, $6)
            """, .text(token.id), .text(token.secretSHA256), .optional(token.name), .text(token.role.rawValue),
            .text(token.storedApps), .integer(token.createdAt))
    }

    public func apiTokens(activeOnly: Bool) throws -> [APITokenRecord] {
        try connection.query(
            """
            SELECT id, secret_sha256, name, role, apps, created_at, last_used_at, revoked_at FROM api_tokens
            WHERE revoked_at IS NULL OR NOT $1 ORDER BY created_at, id
            """, [.bool(activeOnly)]
        ) { row in
            APITokenRecord(
                id: row.string(0), secretSHA256: row.string(1), name: row.optionalString(2),
                role: APITokenRole(rawValue: row.string(3)) ?? .read, apps: APITokenRecord.apps(stored: row.string(4)),
                createdAt: row.int64(5), lastUsedAt: row.optionalInt64(6), revokedAt: row.optionalInt64(7))
        }
    }

    public func revokeAPIToken(id: String, now: Int64) throws -> Bool {
        try connection.run(
            "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", .integer(now), .text(id)) > 0
    }

    /// One statement for every token used since the last call.
    public func markAPITokensUsed(_ uses: [(id: String, at: Int64)]) throws {
        guard !uses.isEmpty else { return }
        try connection.run(
            """
            UPDATE api_tokens SET last_used_at = used.at
            FROM unnest($1::text[], $2::bigint[]) AS used (id, at)
            WHERE api_tokens.id = used.id AND coalesce(api_tokens.last_used_at, 0) < used.at
            """, .array(uses.map(\.id)), .array(uses.map(\.at)))
    }
}
