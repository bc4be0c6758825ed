import Queue
import Support

/// `PGWriter`'s thread: takes groups of jobs from the queue, commits each group in one transaction, answers every
/// job, and reconnects when the connection breaks. Owned by that one thread.
final class PGGroupCommitter {
    private let store: PGQueueStore
    private let queue: JobQueue<PGWriter.Job>
    private let link: PGWriterLink
    private var connection: PGConnection { store.connection }
    /// The open durable group's transaction id: asked after a COMMIT whose answer was lost (`settle`).
    private var transactionID: Int64?

    init(store: PGQueueStore, queue: JobQueue<PGWriter.Job>, link: PGWriterLink) {
        self.store = store
        self.queue = queue
        self.link = link
    }

    /// Commits groups until the queue is closed and drained.
    func run() {
        while true {
            let group = queue.popBatch(limit: PGWriter.maxGroup)
            if group.isEmpty { break }
            if let lost = commit(group) { reconnect(after: lost) }
        }
    }

    // MARK: - One group

    /// Runs `group` in one transaction and answers every job. Returns the error when the connection was lost (the
    /// writer must reconnect before the next group).
    ///
    /// Ingest's writes go first, all in one `insertMessages(writes:now:)` call: a few statements for the group's
    /// messages, whatever their number, where a statement each would pay a round trip each. A write refused there
    /// (an idempotency conflict) was refused before anything of it was written, and fails alone. The other jobs
    /// follow, one after the other with nothing between them: a savepoint around each would cost two round trips
    /// per job (`SAVEPOINT`, `RELEASE`), more than the one statement of a typical job (a batch of outcomes, a
    /// token). Only when a job fails (or the writes' call throws) is the transaction rolled back, and the group
    /// played again with every job in a savepoint of its own (`commitInSavepoints`), so that the failure stays
    /// that job's.
    private func commit(_ group: [PGWriter.Job]) -> PGError? {
        guard group.count > 1 else { return commitAlone(group[0]) }
        let group = group.filter { $0.write != nil } + group.filter { $0.write == nil }
        if case .answered(let lost) = start(group) { return lost }
        var failures = [Error?](repeating: nil, count: group.count)
        let writes = group.prefix { $0.write != nil }
        if !writes.isEmpty, let failure = storeWrites(writes, failures: &failures) {
            if let lost = Self.lostConnection(failure) ?? lostIfDisconnected(failure) { return lose(group, lost) }
            connection.rollbackQuietly()
            store.forgetEnsuredApps()
            return commitInSavepoints(group, failed: nil)
        }
        for index in writes.count..<group.count {
            guard let failure = run(group[index]) else { continue }
            if let lost = Self.lostConnection(failure) ?? lostIfDisconnected(failure) { return lose(group, lost) }
            connection.rollbackQuietly()
            store.forgetEnsuredApps()
            return commitInSavepoints(group, failed: (index, failure))
        }
        return finish(group, failures: failures)
    }

    /// Stores the messages of `writes` in one call; a write refused gets its error in `failures` (at its index in
    /// the group). Returns the error that fails them all: the group must then be rolled back.
    private func storeWrites(_ writes: ArraySlice<PGWriter.Job>, failures: inout [Error?]) -> Error? {
        do {
            let answers = try store.insertMessages(writes: writes.map { $0.write!.messages }, now: Clock.nowMillis())
            if let caught = caughtFailure() { return caught }
            for (index, (job, answer)) in zip(writes.indices, zip(writes, answers)) {
                failures[index] = job.write!.take(answer)
            }
            return nil
        } catch {
            return error
        }
    }

    /// A job alone needs no savepoint: its failure is the transaction's. Rolls it back, and for a deadlock or a
    /// serialization failure runs the job again in a new one.
    private func commitAlone(_ job: PGWriter.Job, attempt: Int = 1) -> PGError? {
        if case .answered(let lost) = start([job]) { return lost }
        if let failure = run(job) {
            connection.rollbackQuietly()
            store.forgetEnsuredApps()
            if let lost = Self.lostConnection(failure) ?? lostIfDisconnected(failure) { return lose([job], lost) }
            if Self.isRetryable(failure), attempt < PGWriter.maxAttempts {
                return commitAlone(job, attempt: attempt + 1)
            }
            job.complete(failure)
            return nil
        }
        return finish([job], failures: [nil])
    }

    /// The group again after job `failed.index` met `failed.failure`, or after the group's writes failed together
    /// (`failed` nil), and the transaction was rolled back: each job in its own savepoint. The jobs before it run
    /// again, seeing what they saw the first time. The failed job itself runs again only for a deadlock or a
    /// serialization failure (its first attempt counted); any other failure it met with the same writes before it,
    /// and it is answered with that without being run twice.
    private func commitInSavepoints(_ group: [PGWriter.Job], failed: (index: Int, failure: Error)?) -> PGError? {
        if case .answered(let lost) = start(group) { return lost }
        var failures: [Error?] = []
        failures.reserveCapacity(group.count)
        for (index, job) in group.enumerated() {
            if let failed, index == failed.index, !Self.isRetryable(failed.failure) {
                failures.append(failed.failure)
                continue
            }
            do {
                failures.append(try runInSavepoint(job, attempt: index == failed?.index ? 2 : 1))
            } catch {
                if let lost = Self.lostConnection(error) ?? lostIfDisconnected(error) { return lose(group, lost) }
                abandon(group, failures: failures, cause: error)
                return nil
            }
        }
        return finish(group, failures: failures)
    }

    /// COMMIT, then answers every job: with its own failure, else with nothing (its result), or with the commit's
    /// error when the commit failed.
    private func finish(_ group: [PGWriter.Job], failures: [Error?]) -> PGError? {
        do {
            try connection.commit()
        } catch {
            store.forgetEnsuredApps()
            let lost = Self.lostConnection(error) ?? lostIfDisconnected(error)
            if lost != nil, let committed = settle() {
                // Reconnected, and the server said what became of the group.
                Log.warn("the connection broke during COMMIT; reconnected, and the server says the group was "
                    + (committed ? "committed" : "rolled back"), ["jobs": .int(Int64(group.count))])
                let rolledBack = PGError(
                    sqlState: "08006",
                    message: "the connection to PostgreSQL broke during COMMIT and the server rolled the "
                        + "transaction back; nothing of this write was stored", isConnectionLost: true)
                for (job, failure) in zip(group, failures) { job.complete(committed ? failure : failure ?? rolledBack) }
                return nil
            }
            Log.error("group commit failed", ["error": .string("\(error)"), "jobs": .int(Int64(group.count))])
            // Lost during COMMIT: whether it committed is unknown, which the error says.
            if let lost { link.markLost(lost) }
            // A job that failed on its own keeps its own error.
            for (job, failure) in zip(group, failures) { job.complete(failure ?? error) }
            if let lost { answerQueued(lost) }
            return lost
        }
        for (job, failure) in zip(group, failures) { job.complete(failure) }
        return nil
    }

    private enum Start {
        case begun
        /// BEGIN failed and every job was answered; `lost` when the connection went.
        case answered(lost: PGError?)
    }

    /// BEGIN for `group`; when it fails, answers every job of it.
    private func start(_ group: [PGWriter.Job]) -> Start {
        do {
            try begin(
                durable: group.contains(where: \.durable), writesOutcomes: group.contains(where: \.writesOutcomes))
            return .begun
        } catch {
            if let lost = Self.lostConnection(error) { return .answered(lost: lose(group, lost)) }
            for job in group { job.complete(error) }
            return .answered(lost: nil)
        }
    }

    /// After a COMMIT whose answer the broken connection lost: one reconnection, and the server's word on the
    /// group's transaction (`txid_status`). Nil when that cannot be had (the server is away, the group was not
    /// durable so its id was not asked): the jobs are then told that the commit is unknown.
    private func settle() -> Bool? {
        guard let transactionID else { return nil }
        do {
            try connection.reset()
            let status = try connection.queryOne("SELECT txid_status($1)", [.integer(transactionID)]) {
                $0.optionalString(0)
            }
            switch status {
            case "committed": return true
            case "aborted": return false
            default: return nil
            }
        } catch {
            return nil
        }
    }

    /// BEGIN, with `synchronous_commit = off` for this transaction when no job needs its commit flushed; both go out
    /// with the group's first statement, in its round trip (`begin(sendingAhead:begun:)`). A connection that broke
    /// while the writer was idle (a server restart, an idle-session timeout: the server's goodbye waits unread on the
    /// socket) is reset first: nothing of the group has run, so that costs it nothing when the reset works.
    ///
    /// A group that may end deliveries takes the outcome feed's lock (`PGQueueStore.lockOutcomeFeed`) right after
    /// BEGIN, in the same round trip, before any statement of its jobs: it waits for another instance's outcomes to
    /// commit while holding no row, so two instances cannot deadlock on it (one holding the lock and waiting for a
    /// row, the other holding the row and waiting for the lock, as the trigger's lock alone would let them).
    private func begin(durable: Bool, writesOutcomes: Bool) throws {
        if connection.isInTransaction {
            // Only a failed ROLLBACK (or a failed SET after BEGIN) leaves one behind; BEGIN would only warn, and
            // the group would join it.
            connection.rollbackQuietly()
            store.forgetEnsuredApps()
        }
        if !connection.readUnasked() {
            try connection.reset()
            Log.info("reconnected to PostgreSQL (the connection had broken while idle)", [
                "server": .string(connection.redactedURL),
            ])
        }
        // A durable group's transaction id comes with its BEGIN, so that a COMMIT whose answer is lost can be
        // settled (`settle`): an answer to ingest must not say "not stored" of a message that was.
        transactionID = nil
        let after = PGStatement(durable ? "SELECT txid_current()" : "SET LOCAL synchronous_commit = off")
        let ahead = writesOutcomes ? [PGQueueStore.lockOutcomeFeed, after] : [after]
        connection.begin(sendingAhead: ahead) { [unowned self] begun in
            if durable, case .success(let results) = begun {
                transactionID = results.last?.map { $0.int64(0) }.first
            }
        }
    }

    /// Runs one job inside savepoint `herald_job`, again after a deadlock or serialization failure (`attempt` is the
    /// first attempt's number); returns the error it threw (its writes undone). Throws when the savepoint itself
    /// fails: the transaction is then untrustworthy.
    private func runInSavepoint(_ job: PGWriter.Job, attempt first: Int) throws -> Error? {
        try connection.run("SAVEPOINT herald_job")
        var attempt = first
        while true {
            guard let failure = run(job) else {
                try connection.run("RELEASE SAVEPOINT herald_job")
                return nil
            }
            if let lost = Self.lostConnection(failure) ?? lostIfDisconnected(failure) { throw lost }
            try connection.run("ROLLBACK TO SAVEPOINT herald_job")
            store.forgetEnsuredApps()
            guard Self.isRetryable(failure), attempt < PGWriter.maxAttempts else {
                try connection.run("RELEASE SAVEPOINT herald_job")
                return failure
            }
            attempt += 1
        }
    }

    /// Runs `job`; returns the error it threw, or the one it caught: a job that returned normally although one of
    /// its statements failed has left the transaction (or savepoint) aborted, and its writes cannot be committed.
    private func run(_ job: PGWriter.Job) -> Error? {
        job.run(store) ?? caughtFailure()
    }

    /// The error for a write that returned normally although one of its statements failed (its error caught).
    private func caughtFailure() -> PGError? {
        guard connection.isInFailedTransaction else { return nil }
        return PGError(
            sqlState: "25P02",
            message: "a statement of this write failed (its error was caught); nothing of the write was stored")
    }

    /// The group's transaction cannot be trusted (a savepoint could not be set, undone or released) though the
    /// connection is fine: rolls it back and answers every job with an error.
    private func abandon(_ group: [PGWriter.Job], failures: [Error?], cause: Error) {
        connection.rollbackQuietly()
        store.forgetEnsuredApps()
        Log.error("group commit rolled back as a whole; no job of it is stored", [
            "error": .string("\(cause)"), "jobs": .int(Int64(group.count)),
        ])
        let sqlState = (cause as? PGError)?.sqlState
        let rolledBack: Error = PGError(
            sqlState: sqlState,
            message: "the transaction this write was part of was rolled back (\(cause)); nothing of it was stored")
        for (index, job) in group.enumerated() {
            // A job that failed on its own keeps its own error; every other one gets the group's.
            let ownFailure = index < failures.count ? failures[index] : nil
            job.complete(ownFailure ?? rolledBack)
        }
    }

    // MARK: - Losing the connection

    /// The connection broke during the group: the server rolls the transaction back, so every job of it (even one
    /// that failed on its own: what it met may have depended on the lost writes before it) is answered with a
    /// transient error, and so is every job queued meanwhile. Returns the loss for `reconnect`.
    private func lose(_ group: [PGWriter.Job], _ cause: PGError) -> PGError {
        store.forgetEnsuredApps()
        link.markLost(cause)
        let error = PGError(
            sqlState: cause.sqlState ?? "08006",
            message: "the connection to PostgreSQL at \(connection.redactedURL) broke during this write; nothing of "
                + "it was stored: \(cause.message)",
            isConnectionLost: true)
        for job in group { job.complete(error) }
        answerQueued(cause)
        return cause
    }

    /// Answers the jobs queued before the connection was marked lost; `PGWriterLink` refuses any newer one.
    private func answerQueued(_ cause: PGError) {
        let error = PGError(
            sqlState: cause.sqlState ?? "08006",
            message: "no connection to PostgreSQL at \(connection.redactedURL), reconnecting; nothing was written: "
                + cause.message,
            isConnectionLost: true)
        let waiting = queue.count
        guard waiting > 0 else { return }
        // This thread alone takes jobs and none is added now, so this takes exactly `waiting` without blocking.
        for job in queue.popBatch(limit: waiting) { job.complete(error) }
    }

    /// Resets the connection, waiting from 100 ms up to 5 s between attempts, until it is back or the writer
    /// closes. Logs once when the outage starts and once when it ends.
    private func reconnect(after cause: PGError) {
        Log.error("lost the connection to PostgreSQL; refusing writes until it is back", [
            "server": .string(connection.redactedURL), "error": .string(cause.message),
        ])
        var delay = 0.1
        var attempts = 0
        while !link.pause(seconds: delay) {
            attempts += 1
            do {
                try connection.reset()
            } catch let error as PGError {
                link.markLost(error)
                delay = min(delay * 2, 5)
                continue
            } catch {
                delay = min(delay * 2, 5)
                continue
            }
            link.markConnected()
            Log.info("reconnected to PostgreSQL; accepting writes again", [
                "server": .string(connection.redactedURL), "attempts": .int(Int64(attempts)),
            ])
            return
        }
    }

    /// `error` as a lost connection, or nil.
    private static func lostConnection(_ error: Error) -> PGError? {
        guard let error = error as? PGError, error.isConnectionLost else { return nil }
        return error
    }

    /// A lost connection that surfaced as another error (a job wrapped the PGError in its own): libpq's status
    /// tells.
    private func lostIfDisconnected(_ error: Error) -> PGError? {
        guard !connection.isConnected else { return nil }
        return PGError(sqlState: "08006", message: "\(error)", isConnectionLost: true)
    }

    /// Deadlocks and serialization failures: the server undid the statement because of another transaction's
    /// timing, and running the job again usually succeeds.
    static func isRetryable(_ error: Error) -> Bool {
        guard let error = error as? PGError, !error.isConnectionLost else { return false }
        return error.sqlState == "40P01" || error.sqlState == "40001"
    }
}
