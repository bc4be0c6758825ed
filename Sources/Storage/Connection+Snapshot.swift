import Queue

extension Connection {
    /// Runs `body` in a read transaction (`BEGIN DEFERRED`), so several queries see one snapshot of the database.
    /// In WAL mode it never blocks the writer, and the writer never blocks it.
    ///
    /// Related SQLite documentation: https://sqlite.org/isolation.html
    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        try within("BEGIN DEFERRED", body)
    }
}
