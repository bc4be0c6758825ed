/// Who a message goes to: exactly one of the FCM legacy targets, or Herald's `users`.
public enum MessageTarget: Sendable, Equatable {
    /// From `to` (one token or notification key) or `registration_ids` (deduplicated, first occurrence kept;
    /// more than FCM's 1000 allowed, since Herald splits the requests).
    case tokens([String])
    /// `to` naming a topic, kept as given: `/topics/news`.
    case topic(String)
    /// A topic condition, kept as given: `'a' in topics && ('b' in topics || 'c' in topics)`.
    case condition(String)
    /// Herald's extension: user ids (deduplicated, order kept) that expand to their registered tokens.
    case users([String])

    /// Whether FCM applies its smaller payload limit (2048 bytes instead of 4096).
    public var isTopicOrCondition: Bool {
        switch self {
        case .topic, .condition: true
        case .tokens, .users: false
        }
    }
}
