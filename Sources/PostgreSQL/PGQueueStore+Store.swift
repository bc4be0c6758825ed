import Storage

// The rest of `Storage.Store` on PostgreSQL: the reads and maintenance operations ingest, the HTTP reads and the
// commands need besides the queue's own (`PGQueueStore.swift`, `PGQueueStore+Messages.swift`).
extension PGQueueStore: Store {
    public var location: String { connection.redactedURL }

    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try write { _ in try body() }
    }

    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        try connection.transaction(isolation: .repeatableRead, body)
    }

    // Not yet translated: each throws until it has its PostgreSQL SQL.

    public func message(id: String) throws -> MessageRecord? { throw Self.notYet("message") }
    public func token(_ token: String) throws -> TokenRecord? {
        try connection.queryOne(
            #"SELECT token, app, "user", created_at, updated_at FROM tokens WHERE token = $1"#, [.text(token)]
        ) {
            TokenRecord(
                token: $0.string(0), app: $0.string(1), user: $0.optionalString(2), createdAt: $0.int64(3),
                updatedAt: $0.int64(4))
        }
    }

    /// Removes `token` from the registry; false when it was not registered.
    public func deleteToken(_ token: String) throws -> Bool {
        try connection.run("DELETE FROM tokens WHERE token = $1", .text(token)) > 0
    }

    public func tokens(app: String?, user: String?, after: String?, limit: Int) throws -> [TokenRecord] {
        throw Self.notYet("tokens")
    }
    public func tokenEvents(after: Int64, limit: Int) throws -> [TokenEventRecord] { throw Self.notYet("tokenEvents") }
    public func appStatuses(now: Int64) throws -> [AppStatus] { throw Self.notYet("appStatuses") }
    public func queueDepth() throws -> [QueueDepthRow] { throw Self.notYet("queueDepth") }
    public func deadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [DeadLetterRecord] {
        throw Self.notYet("deadLetters")
    }
    public func deadLetter(id: Int64) throws -> DeadLetterRecord? { throw Self.notYet("deadLetter") }
    public func deadLetterGroups(_ filter: DeadLetterFilter) throws -> [DeadLetterGroup] {
        throw Self.notYet("deadLetterGroups")
    }
    public func expiredDeadLetterCount(_ filter: DeadLetterFilter, now: Int64) throws -> Int {
        throw Self.notYet("expiredDeadLetterCount")
    }
    public func requeueDeadLetters(_ filter: DeadLetterFilter, now: Int64, limit: Int) throws -> Int {
        throw Self.notYet("requeueDeadLetters")
    }
    public func purgeDeadLetters(
        _ filter: DeadLetterFilter, now: Int64, limit: Int
    ) throws -> (deliveries: Int, messages: Int) { throw Self.notYet("purgeDeadLetters") }
    public func deadLetterCount() throws -> Int { throw Self.notYet("deadLetterCount") }
    public func pruneFinishedDeliveries(updatedBefore cutoff: Int64, limit: Int) throws -> Int {
        throw Self.notYet("pruneFinishedDeliveries")
    }
    public func finishedDeliveryCount(updatedBefore cutoff: Int64) throws -> Int {
        throw Self.notYet("finishedDeliveryCount")
    }
    public func pruneEmptyMessages(
        createdBefore cutoff: Int64, now: Int64, after cursor: String, limit: Int
    ) throws -> (deleted: Int, next: String?) { throw Self.notYet("pruneEmptyMessages") }
    public func pruneTokenEvents(before cutoff: Int64, limit: Int) throws -> Int { throw Self.notYet("pruneTokenEvents") }
    public func pruneReconciliationState(now: Int64, limit: Int) throws -> Int {
        throw Self.notYet("pruneReconciliationState")
    }

    private static func notYet(_ operation: String) -> PGError {
        PGError(message: "\(operation) is not yet translated to PostgreSQL")
    }
}
