import Queue

extension SQLiteQueueStore {
    /// An upsert keeps the row, and with it the rowid a `users` fan-out orders by.
    public func registerToken(_ token: String, app: String, user: String?, now: Int64) throws {
        try connection.run(
            """
            INSERT INTO tokens (token, app, user, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (token) DO UPDATE SET app = excluded.app, user = excluded.user, updated_at = excluded.updated_at
            """, .text(token), .text(app), .optional(user), .integer(now), .integer(now))
    }

    public func token(_ token: String) throws -> TokenRecord? {
        try connection.queryOne(
            "SELECT token, app, user, created_at, updated_at FROM tokens WHERE token = ?", [.text(token)]
        ) {
            TokenRecord(
                token: $0.string(0), app: $0.string(1), user: $0.optionalString(2), createdAt: $0.int64(3),
                updatedAt: $0.int64(4))
        }
    }

    /// Removes `token` from the registry; false when it was not registered.
    public func deleteToken(_ token: String) throws -> Bool {
        try connection.run("DELETE FROM tokens WHERE token = ?", .text(token)) > 0
    }
}
