import Queue
import Support

/// Where every ingest endpoint stores messages: one job on the group-commit writer, then, once committed, the
/// message counted in `herald_ingested_messages_total{app}` and the claimer woken when it has deliveries. A repeat
/// of an earlier `Idempotency-Key` stored nothing, so it is neither counted nor wakes anyone.
struct MessageIntake: Sendable {
    let writer: any StoreWriter
    let metrics: Metrics
    /// Wakes the claimer (and, on PostgreSQL, the other instances).
    let committed: @Sendable () -> Void

    func store(_ message: NewMessage, completion: @escaping @Sendable (Result<AcceptedMessage, Error>) -> Void) {
        writer.enqueue({ try $0.insertMessage(message, now: Clock.nowMillis()) }) { [self] result in
            if case .success(let accepted) = result { afterCommit([(message, accepted)]) }
            completion(result)
        }
    }

    /// Stores the messages of a batch in one job, all with the same `now`; nil items are skipped and answered nil.
    func store(
        _ messages: [NewMessage?], completion: @escaping @Sendable (Result<[AcceptedMessage?], Error>) -> Void
    ) {
        writer.enqueue({ store -> [AcceptedMessage?] in
            let now = Clock.nowMillis()
            return try messages.map { message in try message.map { try store.insertMessage($0, now: now) } }
        }) { [self] result in
            if case .success(let accepted) = result {
                afterCommit(zip(messages, accepted).compactMap { message, accepted in
                    guard let message, let accepted else { return nil }
                    return (message, accepted)
                })
            }
            completion(result)
        }
    }

    private func afterCommit(_ stored: [(message: NewMessage, accepted: AcceptedMessage)]) {
        let new = stored.filter { !$0.accepted.isRepeat }
        for (message, _) in new { metrics.increment("herald_ingested_messages_total", ["app": message.app]) }
        if new.contains(where: { $0.accepted.deliveries > 0 }) { committed() }
    }
}
