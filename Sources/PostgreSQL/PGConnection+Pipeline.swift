import CLibPQ

/// One statement of a pipeline: SQL text and its arguments.
public struct PGStatement: Sendable {
    public var sql: String
    public var arguments: [PGValue]

    public init(_ sql: String, _ arguments: [PGValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }
}

extension PGConnection {
    /// Sends all `statements` at once and reads their results after, in one round trip (libpq's pipeline mode)
    /// instead of one per statement: what group commit needs to store many messages per fsync quickly.
    ///
    /// Outside a transaction the batch is one implicit transaction: every statement took effect, or (when one
    /// failed) none did. Inside `transaction` it is part of that transaction, and a failure fails it.
    /// - Returns: each statement's result, in order.
    /// - Throws: the first statement's error; the later statements did not run.
    ///
    /// Results are read only after everything is sent: keep a batch to what the socket buffers hold (a few
    /// thousand short statements, not millions of rows of RETURNING).
    ///
    /// Related PostgreSQL documentation: https://www.postgresql.org/docs/current/libpq-pipeline-mode.html
    @discardableResult
    public func pipeline(_ statements: [PGStatement]) throws -> [PGResult] {
        guard !statements.isEmpty else { return [] }
        let wasInTransaction = isInTransaction
        let (results, failure) = try exchange(statements)
        if let failure {
            // A batch that opened its own transaction (BEGIN … COMMIT) and failed in it leaves it aborted.
            if !wasInTransaction { rollbackQuietly() }
            throw failure.error
        }
        return results
    }

    /// Sends `statements` in pipeline mode with one sync and reads every answer. Returns the results of those that
    /// ran, in order, and the first failure with its statement's index (the statements after it did not run).
    /// - Throws: when the connection breaks (`isConnectionLost`), or libpq cannot send.
    func exchange(_ statements: [PGStatement]) throws -> (results: [PGResult], failure: (index: Int, error: PGError)?) {
        // A BEGIN still waiting goes first (`begin(sendingAhead:)`), with its own answer.
        if let pending = pendingBegin {
            pendingBegin = nil
            let ahead = pending.statements
            do {
                let (results, failure) = try exchange(ahead + statements)
                if let failure, failure.index < ahead.count {
                    pending.begun(.failure(failure.error))
                    return ([], (0, failure.error))
                }
                pending.begun(.success(Array(results.prefix(ahead.count))))
                return (Array(results.dropFirst(ahead.count)), failure.map { ($0.index - ahead.count, $0.error) })
            } catch let error as PGError {
                pending.begun(.failure(error))
                throw error
            }
        }
        // New SQL texts are prepared first, one round trip each, only the first time this session sees them.
        let names = try statements.map { try prepared($0.sql) }
        guard PQenterPipelineMode(handle) == 1 else { throw connectionError(sql: nil) }
        defer { PQexitPipelineMode(handle) }

        for (statement, name) in zip(statements, names) {
            let sent = try withParameters(statement.arguments, sql: statement.sql) { count, values in
                PQsendQueryPrepared(handle, name, count, values, nil, nil, 0)
            }
            guard sent == 1 else { throw connectionError(sql: statement.sql) }
        }
        guard PQpipelineSync(handle) == 1 else { throw connectionError(sql: nil) }
        roundTrips += 1

        // Each statement's result is followed by a nil; the batch ends with the sync point.
        var results: [PGResult] = []
        results.reserveCapacity(statements.count)
        var failure: (index: Int, error: PGError)?
        var index = 0
        while true {
            guard let raw = PQgetResult(handle) else {
                guard isConnected else { throw connectionError(sql: nil) }
                index += 1
                continue
            }
            let status = PQresultStatus(raw)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(raw)
                break
            }
            let sql = index < statements.count ? statements[index].sql : nil
            switch status {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                results.append(PGResult(raw))
            case PGRES_PIPELINE_ABORTED:
                PQclear(raw)
            default:
                do {
                    try check(raw, sql: sql)
                } catch let error as PGError {
                    if failure == nil { failure = (index, error) }
                    guard isConnected else { throw error }
                }
            }
        }
        PQexitPipelineMode(handle)
        return (results, failure)
    }
}
