import Support

/// Ingest's rules, the same on every engine: what an idempotency key means, when a message expires, which lane and
/// which collapse heads its deliveries get. Each engine only writes what `MessageInsert` says.
extension Store {
    /// Stores a message and one queued delivery per target. Call inside a write transaction.
    ///
    /// An idempotency key is scoped to the app (to the backend for `NewMessage.everyApp`). A repeat within the window
    /// with the same message returns the first one and stores nothing; the same key with a different message throws
    /// `IdempotencyConflict`; a key older than the window is free again (the old message keeps its rows). Two
    /// writers taking the same key at once store one message: the engine refuses the second insert
    /// (`storeMessage` returns nil), which then answers as a repeat (or a conflict).
    public func insertMessage(_ message: NewMessage, now: Int64) throws -> AcceptedMessage {
        let fingerprint = message.idempotencyKey.map { _ in message.fingerprint }
        if let key = message.idempotencyKey, let fingerprint,
           let earlier = try repeatedMessage(app: message.app, key: key, fingerprint: fingerprint, now: now) {
            return earlier
        }
        let insert = MessageInsert(
            message, id: MessageID.make(now: now), fingerprint: fingerprint, createdAt: now,
            ttlZeroWindowMillis: ttlZeroWindowMillis)
        if message.app != NewMessage.everyApp { try ensureApp(message.app) }
        guard let stored = try storeMessage(insert) else {
            // Another transaction committed the same key after the look-up: answer as for its message.
            guard let key = message.idempotencyKey, let fingerprint,
                  let earlier = try repeatedMessage(app: message.app, key: key, fingerprint: fingerprint, now: now)
            else { throw IdempotencyKeyTaken(key: message.idempotencyKey ?? "") }
            return earlier
        }
        return AcceptedMessage(id: insert.id, rowID: stored.rowID, deliveries: stored.deliveries, isRepeat: false)
    }

    /// The answer for a message whose key already names one: nil when none, or when the key expired (then it is
    /// freed).
    /// - Throws: `IdempotencyConflict` when the key names another message.
    private func repeatedMessage(app: String, key: String, fingerprint: Int64, now: Int64) throws -> AcceptedMessage? {
        guard let earlier = try keyedMessage(app: app, key: key) else { return nil }
        switch earlier.verdict(fingerprint: fingerprint, now: now) {
        case .repeated:
            return AcceptedMessage(
                id: earlier.id, rowID: earlier.rowID, deliveries: try deliveryCount(messageID: earlier.id),
                isRepeat: true)
        case .conflict:
            throw IdempotencyConflict(key: key)
        case .keyExpired:
            try releaseIdempotencyKey(messageID: earlier.id)
            return nil
        }
    }
}

extension Store {
    /// Drops the message's queued deliveries with reason `Cancelled` (`DELETE /v1/messages/{id}`, the console).
    /// Nil when there is no such message; otherwise how many were cancelled (deliveries already in flight or finished
    /// are left alone).
    public func cancelMessage(id: String, now: Int64) throws -> Int? {
        guard try messageExists(id: id) else { return nil }
        return try endQueuedDeliveries(of: id, app: nil, state: .dropped, reason: .cancelled, now: now)
    }
}
