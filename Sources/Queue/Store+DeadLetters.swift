/// The dead-letter commands' rules, the same on every engine (`herald dead`, the console).
extension Store {
    /// One dead letter by its delivery id; nil when there is no such delivery or it is not dead.
    public func deadLetter(id: Int64) throws -> DeadLetterRecord? {
        try deadLetters(DeadLetterFilter(deliveryIDs: [id]), limit: 1).first
    }

    /// Deletes up to `limit` dead letters matching `filter`, and their messages when nothing else of them is left
    /// and no idempotency key still answers with them. Call inside a write transaction, and again until it returns
    /// 0 deliveries: each call is one bounded batch.
    public func purgeDeadLetters(
        _ filter: DeadLetterFilter, now: Int64, limit: Int
    ) throws -> (deliveries: Int, messages: Int) {
        let messageIDs = try deleteDeadLetters(filter, limit: limit)
        guard !messageIDs.isEmpty else { return (0, 0) }
        var seen = Set<String>()
        let messages = try deleteEmptyMessages(
            messageIDs.filter { seen.insert($0).inserted }, keyHorizon: idempotencyHorizon(now: now))
        return (messageIDs.count, messages)
    }
}
