/// A message's priority (`messages.priority`): `high` is claimed ahead of `normal` and asks FCM to wake the
/// device. Read from text once, where a request or a row is decoded; compared as a value everywhere after.
public enum Priority: String, Sendable, CaseIterable {
    case normal
    case high

    /// The claim's lane for the message's deliveries (`deliveries.priority_rank`).
    public var lane: PriorityLane {
        switch self {
        case .normal: .normal
        case .high: .high
        }
    }

    /// A `messages.priority` as read back. The schema's CHECK admits these two only, and a binary refuses a schema
    /// other than its own, so any other text is a broken database.
    public init(stored text: String) {
        guard let priority = Priority(rawValue: text) else {
            preconditionFailure("messages.priority '\(text)' is not one of the priorities the schema allows")
        }
        self = priority
    }
}
