import Support

/// How long an `Idempotency-Key` keeps answering with its first message (SPEC §3: 24 h).
public let idempotencyWindowMillis: Int64 = 24 * 3600 * 1000

/// The latest `created_at` whose idempotency key no longer answers at `now`: a message created after it may still
/// be named by its key, so neither `dead purge` nor retention deletes it.
public func idempotencyHorizon(now: Int64) -> Int64 { now - idempotencyWindowMillis }

/// An `Idempotency-Key` in its scope: the app's (the backend's for `NewMessage.everyApp`).
public struct MessageKey: Sendable, Hashable {
    public var app: String
    public var key: String

    public init(app: String, key: String) {
        (self.app, self.key) = (app, key)
    }
}

extension NewMessage {
    /// Its idempotency key in the key's scope; nil without one.
    public var key: MessageKey? { idempotencyKey.map { MessageKey(app: app, key: $0) } }
}

/// The message an `Idempotency-Key` already names in its app, as an engine reads it (`Store.keyedMessages`).
public struct KeyedMessage: Sendable, Equatable {
    public var id: String
    public var rowID: Int64
    public var createdAt: Int64
    /// `NewMessage.fingerprint` of the message stored; nil for rows stored before fingerprints existed.
    public var fingerprint: Int64?
    /// How many deliveries it has: what a repeat answers.
    public var deliveries: Int

    public init(id: String, rowID: Int64, createdAt: Int64, fingerprint: Int64?, deliveries: Int = 0) {
        (self.id, self.rowID, self.createdAt, self.fingerprint) = (id, rowID, createdAt, fingerprint)
        self.deliveries = deliveries
    }

    /// The answer to a repeat of it.
    var answer: AcceptedMessage { AcceptedMessage(id: id, rowID: rowID, deliveries: deliveries, isRepeat: true) }

    /// What the key means for a new message with `fingerprint` at `now`.
    public func verdict(fingerprint: Int64, now: Int64) -> IdempotencyVerdict {
        guard createdAt > idempotencyHorizon(now: now) else { return .keyExpired }
        // Rows stored before fingerprints existed match any body, as they did then.
        return self.fingerprint == nil || self.fingerprint == fingerprint ? .repeated : .conflict
    }
}

/// What a key already in use means for a new message that carries it.
public enum IdempotencyVerdict: Sendable, Equatable {
    /// Within the window and the same message: answer with the first one and store nothing.
    case repeated
    /// Within the window, another message: refused (`IdempotencyConflict`, 409).
    case conflict
    /// The window has passed: the key is free again, and the old message keeps its rows.
    case keyExpired
}

/// An `Idempotency-Key` the app already used within the window for a different message.
public struct IdempotencyConflict: Error, CustomStringConvertible {
    public var key: String

    public init(key: String) { self.key = key }

    public var description: String {
        "Idempotency-Key was already used for a different message; use a new key for a new message"
    }
}

/// Another transaction stored a message under the same key between the look-up and the insert, and then the key
/// named nothing any more (its message gone meanwhile): nothing was stored, and the same request may be sent again.
public struct IdempotencyKeyTaken: StoreError, CustomStringConvertible {
    public var key: String

    public init(key: String) { self.key = key }

    public var isTransient: Bool { false }
    public var description: String { "the message could not be stored: its key was taken" }
}

extension NewMessage {
    /// A 64-bit FNV-1a hash of everything stored of the message: equal for a repeat of the same message, different
    /// (but for a 2^-64 chance) for another one under the same key.
    public var fingerprint: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ text: String) {
            for byte in text.utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            }
            hash = (hash ^ 0xFF) &* 0x0000_0100_0000_01B3  // a separator no UTF-8 text contains
        }
        let target: [String] = switch self.target {
        case .tokens(let tokens): ["tokens"] + tokens
        case .users(let users): ["users"] + users
        case .topic(let topic): ["topic", topic]
        case .condition(let condition): ["condition", condition]
        }
        for part in target { mix(part) }
        for part in [
            payload, collapseKey ?? "\u{0}", priority.rawValue, String(ttlSeconds), dryRun ? "1" : "0", format.rawValue,
            tokenField.rawValue,
        ] { mix(part) }
        // Only when given, so a message without one keeps the fingerprint stored before `send_at` existed.
        if let sendAt { for part in ["send_at", String(sendAt)] { mix(part) } }
        return Int64(bitPattern: hash)
    }
}
