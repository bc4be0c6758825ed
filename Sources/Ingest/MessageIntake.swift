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
        writer.insertMessages([message]) { [self] result in
            let result = result.map { $0[0] }
            if case .success(let accepted) = result { afterCommit([(message, accepted)]) }
            completion(result)
        }
    }

    /// Stores the messages of a batch in one write, all with the same `now`; nil items are skipped and answered nil.
    func store(
        _ messages: [NewMessage?], completion: @escaping @Sendable (Result<[AcceptedMessage?], Error>) -> Void
    ) {
        let valid = messages.compactMap { $0 }
        writer.insertMessages(valid) { [self] result in
            if case .success(let accepted) = result {
                afterCommit(zip(valid, accepted).map { (message: $0, accepted: $1) })
            }
            completion(result.map { accepted in
                var next = accepted.makeIterator()
                return messages.map { message in message.flatMap { _ in next.next() } }
            })
        }
    }

    private func afterCommit(_ stored: [(message: NewMessage, accepted: AcceptedMessage)]) {
        let new = stored.filter { !$0.accepted.isRepeat }
        for (message, _) in new { metrics.increment("herald_ingested_messages_total", ["app": message.app]) }
        if new.contains(where: { $0.accepted.deliveries > 0 }) { committed() }
    }
}
