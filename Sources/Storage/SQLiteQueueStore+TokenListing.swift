import Queue

extension SQLiteQueueStore {
    /// Registered tokens in token order, optionally of one app and one user, after `after` (for paging).
    public func tokens(app: String?, user: String?, after: String?, limit: Int) throws -> [TokenRecord] {
        var terms: [String] = []
        var arguments: [SQLValue] = []
        if let app {
            terms.append("app = ?")
            arguments.append(.text(app))
        }
        if let user {
            terms.append("user = ?")
            arguments.append(.text(user))
        }
        if let after {
            terms.append("token > ?")
            arguments.append(.text(after))
        }
        let condition = terms.isEmpty ? "" : "WHERE " + terms.joined(separator: " AND ")
        return try connection.query(
            "SELECT token, app, user, created_at, updated_at FROM tokens \(condition) ORDER BY token LIMIT ?",
            arguments + [.integer(Int64(limit))]
        ) {
            TokenRecord(
                token: $0.string(0), app: $0.string(1), user: $0.optionalString(2), createdAt: $0.int64(3),
                updatedAt: $0.int64(4))
        }
    }
}
