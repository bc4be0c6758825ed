/// The token registry's rules, the same on every engine.
extension Store {
    /// Registers `token` for `app` and `user`, or moves it to them. Returns the row as it now is and whether it is
    /// new.
    public func upsertToken(
        _ token: String, app: String, user: String?, now: Int64
    ) throws -> (TokenRecord, created: Bool) {
        let existing = try self.token(token)
        try registerToken(token, app: app, user: user, now: now)
        let record = TokenRecord(
            token: token, app: app, user: user, createdAt: existing?.createdAt ?? now, updatedAt: now)
        return (record, existing == nil)
    }

    /// Events with an id above `after`, oldest first, of every app.
    public func tokenEvents(after: Int64, limit: Int) throws -> [TokenEventRecord] {
        try tokenEvents(after: after, limit: limit, apps: nil)
    }
}
