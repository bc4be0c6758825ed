import CLibPQ

extension PGConnection {
    /// How a transaction sees other transactions' writes.
    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// A statement that failed inside `body` aborts the transaction even when `body` caught the error; the
    /// COMMIT then rolls back, and this throws rather than report a commit that did not happen. Use `savepoint`
    /// for a statement that may fail without ending the transaction.
    @discardableResult
    public func transaction<T>(isolation: Isolation = .readCommitted, _ body: () throws -> T) throws -> T {
        guard !isInTransaction else {
            // BEGIN inside a transaction is only a warning in PostgreSQL; the inner COMMIT would end the outer one.
            throw PGError(sqlState: "25001", message: "a transaction is already open on this connection; use savepoint")
        }
        try run(isolation == .readCommitted ? "BEGIN" : "BEGIN ISOLATION LEVEL \(isolation.rawValue)")
        let value: T
        do {
            value = try body()
        } catch {
            rollbackQuietly()
            throw error
        }
        try commit()
        return value
    }

    /// Runs `body` inside `SAVEPOINT`: released when it returns; rolled back to (undoing only `body`'s writes,
    /// leaving the enclosing transaction usable) when it throws. Needs an open transaction; nests.
    @discardableResult
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "herald_savepoint_\(savepointDepth)"
        try run("SAVEPOINT \(name)")
        let value: T
        do {
            value = try body()
        } catch {
            if isConnected {
                try run("ROLLBACK TO SAVEPOINT \(name)")
                try run("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
        try run("RELEASE SAVEPOINT \(name)")
        return value
    }

    /// Opens a transaction whose BEGIN, and `statements` after it (`SET LOCAL …`, `SELECT txid_current()`), go out
    /// with the transaction's first statement, in its round trip (pipeline mode), instead of costing one of their
    /// own. `begun` gets their results then, or the error that stopped them (then the statement did not run, and
    /// throws that error). A transaction that runs no statement sends nothing: its COMMIT or ROLLBACK forgets it.
    func begin(sendingAhead statements: [PGStatement], begun: @escaping (Result<[PGResult], PGError>) -> Void) {
        pendingBegin = PendingBegin(statements: [PGStatement("BEGIN")] + statements, begun: begun)
    }

    /// COMMIT, throwing when the server rolled back instead (the transaction had failed).
    func commit() throws {
        if pendingBegin != nil {
            pendingBegin = nil
            return
        }
        let result: PGResult
        do {
            result = try self.result("COMMIT", [])
        } catch let error as PGError {
            rollbackQuietly()
            guard error.isConnectionLost else { throw error }
            // The COMMIT may or may not have reached the server before the connection broke.
            var unknown = error
            unknown.message = "the connection broke during COMMIT; the transaction may or may not have been "
                + "committed: \(error.message)"
            throw unknown
        }
        if result.commandTag == "ROLLBACK" {
            throw PGError(
                sqlState: "25P02", message: "the transaction was rolled back because a statement in it failed",
                sql: "COMMIT")
        }
    }

    /// A statement failed in the open transaction (or savepoint), which now accepts only ROLLBACK (or ROLLBACK TO):
    /// true even when the caller caught that statement's error.
    public var isInFailedTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INERROR }

    func rollbackQuietly() {
        if pendingBegin != nil {
            pendingBegin = nil
            return
        }
        guard isConnected, isInTransaction else { return }
        _ = try? result("ROLLBACK", [])
    }
}

/// A BEGIN waiting for its transaction's first statement (`PGConnection.begin(sendingAhead:begun:)`).
struct PendingBegin {
    /// BEGIN and the statements after it.
    var statements: [PGStatement]
    var begun: (Result<[PGResult], PGError>) -> Void
}
