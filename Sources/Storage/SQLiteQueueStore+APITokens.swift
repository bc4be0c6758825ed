import Queue

extension SQLiteQueueStore {
    // MARK: - API tokens

    public func insertAPIToken(_ token: APITokenRecord) throws {
        try connection.run(
            """
            INSERT INTO api_tokens (id, secret_sha256, name, role, apps, created_at) VALUES (?, ?, ?, ?, ?, ?)
            """, .text(token.id), .text(token.secretSHA256), .optional(token.name), .text(token.role.rawValue),
            .text(token.storedApps), .integer(token.createdAt))
    }

    public func apiTokens(activeOnly: Bool) throws -> [APITokenRecord] {
        try connection.query(
            """
            SELECT id, secret_sha256, name, role, apps, created_at, last_used_at, revoked_at FROM api_tokens
            WHERE revoked_at IS NULL OR ? = 0 ORDER BY created_at, id
            """, [.integer(activeOnly ? 1 : 0)]
        ) { row in
            APITokenRecord(
                id: row.string(0), secretSHA256: row.string(1), name: row.optionalString(2),
                role: APITokenRole(rawValue: row.string(3)) ?? .read, apps: APITokenRecord.apps(stored: row.string(4)),
                createdAt: row.int64(5), lastUsedAt: row.optionalInt64(6), revokedAt: row.optionalInt64(7))
        }
    }

    public func revokeAPIToken(id: String, now: Int64) throws -> Bool {
        try connection.run(
            "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", .integer(now), .text(id)) > 0
    }

    public func markAPITokensUsed(_ uses: [(id: String, at: Int64)]) throws {
        for use in uses {
            try connection.run(
                "UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND coalesce(last_used_at, 0) < ?",
                .integer(use.at), .text(use.id), .integer(use.at))
        }
    }
}
