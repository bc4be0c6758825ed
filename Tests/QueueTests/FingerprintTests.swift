import Testing

@testable import Queue

private let t0: Int64 = 1_700_000_000_000

/// `NewMessage.fingerprint`, what decides whether a key already in use names the same message (a repeat) or another
/// one (a conflict): everything stored of the message counts, and nothing else.
@Suite struct FingerprintTests {
    static let base = NewMessage(
        app: "default", idempotencyKey: "k", payload: #"{"data":{"x":"1"}}"#, target: .tokens(["a", "b"]),
        collapseKey: "score", ttlSeconds: 60)

    /// The base message with one thing changed.
    static func changed(_ change: (inout NewMessage) -> Void) -> NewMessage {
        var message = base
        change(&message)
        return message
    }

    @Test func theSameMessageHasTheSameFingerprintWhateverItsKeyOrApp() {
        var again = Self.base
        again.idempotencyKey = "another key"
        again.app = "other"
        #expect(again.fingerprint == Self.base.fingerprint)
    }

    @Test(arguments: [
        ("payload", changed { $0.payload = #"{"data":{"x":"2"}}"# }),
        ("format", changed { $0.format = .v1 }),
        ("token field", changed { $0.tokenField = .fid }),
        ("token order", changed { $0.target = .tokens(["b", "a"]) }),
        ("tokens run together", changed { $0.target = .tokens(["ab"]) }),
        ("users, not tokens", changed { $0.target = .users(["a", "b"]) }),
        ("a topic", changed { $0.target = .topic("a") }),
        ("a condition", changed { $0.target = .condition("a") }),
        ("no collapse key", changed { $0.collapseKey = nil }),
        ("an empty collapse key", changed { $0.collapseKey = "" }),
        ("priority", changed { $0.priority = .high }),
        ("TTL", changed { $0.ttlSeconds = 61 }),
        ("dry run", changed { $0.dryRun = true }),
    ])
    func anythingStoredOfTheMessageChangesItsFingerprint(_ what: String, _ other: NewMessage) {
        #expect(other.fingerprint != Self.base.fingerprint, "\(what)")
    }

    /// What a key's earlier message answers a repeat with: its own id, row and deliveries, marked as a repeat.
    @Test func aRepeatAnswersWithTheEarlierMessage() {
        let earlier = KeyedMessage(id: "m", rowID: 7, createdAt: t0, fingerprint: 1, deliveries: 3)
        #expect(earlier.answer == AcceptedMessage(id: "m", rowID: 7, deliveries: 3, isRepeat: true))
        let stored = AcceptedMessage(id: "n", rowID: 8, deliveries: 2, isRepeat: false)
        #expect(stored.asRepeat == AcceptedMessage(id: "n", rowID: 8, deliveries: 2, isRepeat: true))
    }

    @Test(arguments: [
        (NewMessage(app: "shop", idempotencyKey: "k", payload: "{}", target: .tokens(["a"])),
         MessageKey(app: "shop", key: "k") as MessageKey?),
        (NewMessage(app: NewMessage.everyApp, idempotencyKey: "k", payload: "{}", target: .users(["u"])),
         MessageKey(app: "*", key: "k")),
        (NewMessage(app: "shop", payload: "{}", target: .tokens(["a"])), nil),
    ])
    func aKeyIsScopedToItsMessagesApp(_ message: NewMessage, _ key: MessageKey?) {
        #expect(message.key == key)
    }
}
