import Support

/// Ingest's rules, the same on every engine: what an idempotency key means, when a message expires, which lane and
/// which collapse heads its deliveries get. Each engine only writes what `MessageInsert` says, set-based: the
/// messages of many writes in a few statements.
extension Store {
    /// Stores a message and one queued delivery per target. Call inside a write transaction.
    ///
    /// An idempotency key is scoped to the app (to the backend for `NewMessage.everyApp`). A repeat within the window
    /// with the same message returns the first one and stores nothing; the same key with a different message throws
    /// `IdempotencyConflict`; a key older than the window is free again (the old message keeps its rows). Two
    /// writers taking the same key at once store one message: the engine refuses the second insert
    /// (`storeMessages` answers nil), which then answers as a repeat (or a conflict).
    public func insertMessage(_ message: NewMessage, now: Int64) throws -> AcceptedMessage {
        try insertMessages([message], now: now)[0]
    }

    /// One write's messages (a batch request), each as `insertMessage` stores it, in order: a message repeating the
    /// key of one before it in the write is its repeat. All are stored or, when one is refused, none.
    public func insertMessages(_ messages: [NewMessage], now: Int64) throws -> [AcceptedMessage] {
        try insertMessages(writes: [messages], now: now)[0].get()
    }

    /// The messages of several writes at once, as if each write were stored by `insertMessages` one after the
    /// other in this order, but with a few statements for all of them (the group commit of a writer gathers the
    /// writes of concurrent requests here). A write refused (`IdempotencyConflict`) stores nothing and is answered
    /// with its error; the others are stored. Call inside a write transaction.
    ///
    /// - Throws: the engine's error, or a write's refusal that only showed once the messages were written (a key
    ///   another transaction took meanwhile, where the write's other messages are already stored). Nothing of the
    ///   call may then be kept: roll it back, and store the writes one at a time to give each its own answer.
    public func insertMessages(writes: [[NewMessage]], now: Int64) throws -> [Result<[AcceptedMessage], Error>] {
        let keys = Set(writes.joined().compactMap(\.key))
        var plan = IngestPlan(earlier: keys.isEmpty ? [:] : try keyedMessages(Array(keys)), now: now)
        let decided = writes.map { write in
            Result { try plan.decide(write, ttlZeroWindowMillis: ttlZeroWindowMillis) }
        }
        for messageID in plan.releases { try releaseIdempotencyKey(messageID: messageID) }
        for app in Set(plan.inserts.map(\.message.app)) where app != NewMessage.everyApp { try ensureApp(app) }
        let stored = plan.inserts.isEmpty ? [] : try storeMessages(plan.inserts)
        var answers: [AcceptedMessage] = []
        answers.reserveCapacity(plan.inserts.count)
        for (insert, stored) in zip(plan.inserts, stored) {
            if let stored {
                answers.append(
                    AcceptedMessage(id: insert.id, rowID: stored.rowID, deliveries: stored.deliveries, isRepeat: false))
            } else {
                answers.append(try concurrentRepeat(of: insert.message, now: now))
            }
        }
        return decided.map { write in
            write.map { decisions in
                decisions.map { decision in
                    switch decision {
                    case .stored(let index): answers[index]
                    case .repeatOfStored(let index): answers[index].asRepeat
                    case .repeatOf(let earlier): earlier
                    }
                }
            }
        }
    }

    /// The answer for a message whose insert found its key taken by another transaction since the look-up: that
    /// transaction's message, when it is the same one.
    /// - Throws: `IdempotencyConflict` when it is another message; `IdempotencyKeyTaken` when the key names nothing
    ///   any more (its message gone meanwhile).
    private func concurrentRepeat(of message: NewMessage, now: Int64) throws -> AcceptedMessage {
        guard let key = message.key, let earlier = try keyedMessages([key])[key] else {
            throw IdempotencyKeyTaken(key: message.idempotencyKey ?? "")
        }
        switch earlier.verdict(fingerprint: message.fingerprint, now: now) {
        case .repeated: return earlier.answer
        case .conflict: throw IdempotencyConflict(key: key.key)
        case .keyExpired: throw IdempotencyKeyTaken(key: key.key)
        }
    }
}

/// What `insertMessages` decides before it writes anything: the new messages of every write not refused, the
/// expired keys they free, and each message's answer as far as it is known.
private struct IngestPlan {
    /// What a message of a write becomes.
    enum Decision {
        /// Stored as `inserts[index]`.
        case stored(Int)
        /// A repeat of `inserts[index]`, a message of this call.
        case repeatOfStored(Int)
        /// A repeat of a message stored before.
        case repeatOf(AcceptedMessage)
    }

    /// The messages the keys named before this call.
    let earlier: [MessageKey: KeyedMessage]
    let now: Int64
    private(set) var inserts: [MessageInsert] = []
    /// Messages whose expired key a new message takes.
    private(set) var releases: [String] = []
    /// Keys taken by the new messages so far, with their `inserts` index.
    private var taken: [MessageKey: Int] = [:]

    init(earlier: [MessageKey: KeyedMessage], now: Int64) {
        (self.earlier, self.now) = (earlier, now)
    }

    /// One write's decisions; nothing of it is kept when it throws.
    /// - Throws: `IdempotencyConflict` for a key already naming another message.
    mutating func decide(_ write: [NewMessage], ttlZeroWindowMillis: Int64) throws -> [Decision] {
        let (insertCount, releaseCount) = (inserts.count, releases.count)
        do {
            return try write.map { try decide($0, ttlZeroWindowMillis: ttlZeroWindowMillis) }
        } catch {
            // Every key the write's new messages took was free before it.
            for insert in inserts[insertCount...] { insert.message.key.map { taken[$0] = nil } }
            inserts.removeSubrange(insertCount...)
            releases.removeSubrange(releaseCount...)
            throw error
        }
    }

    private mutating func decide(_ message: NewMessage, ttlZeroWindowMillis: Int64) throws -> Decision {
        let fingerprint = message.key.map { _ in message.fingerprint }
        if let key = message.key, let fingerprint {
            if let index = taken[key] {
                // Taken in this call: a message as new as `now`.
                let first = inserts[index]
                let keyed = KeyedMessage(id: first.id, rowID: 0, createdAt: now, fingerprint: first.fingerprint)
                guard keyed.verdict(fingerprint: fingerprint, now: now) == .repeated else {
                    throw IdempotencyConflict(key: key.key)
                }
                return .repeatOfStored(index)
            }
            if let earlier = earlier[key] {
                switch earlier.verdict(fingerprint: fingerprint, now: now) {
                case .repeated: return .repeatOf(earlier.answer)
                case .conflict: throw IdempotencyConflict(key: key.key)
                case .keyExpired: releases.append(earlier.id)
                }
            }
            taken[key] = inserts.count
        }
        inserts.append(
            MessageInsert(
                message, id: MessageID.make(now: now), fingerprint: fingerprint, createdAt: now,
                ttlZeroWindowMillis: ttlZeroWindowMillis))
        return .stored(inserts.count - 1)
    }
}

extension Store {
    /// Drops the message's queued deliveries — due now or scheduled for later (`send_at`, a retry's backoff) — with
    /// reason `Cancelled` through the queue's own final-state operation (`endQueuedDeliveries`), and stamps the
    /// message's `cancelled_at` (`DELETE /v1/messages/{id}`, the console). Nil when there is no such message;
    /// otherwise how many were cancelled. A delivery in flight cannot be unsent: its outcome stands (it was leased
    /// before the cancel, or the cancel's update waited for the claim and found it no longer queued), and so does a
    /// finished one.
    public func cancelMessage(id: String, now: Int64) throws -> Int? {
        guard try markCancelled(id: id, now: now) else { return nil }
        return try endQueuedDeliveries(of: id, app: nil, state: .dropped, reason: .cancelled, now: now)
    }
}
