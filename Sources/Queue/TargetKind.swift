/// How a message addresses FCM (`messages.target_kind`): which request fields carry its target, and which reply
/// shapes the classifier accepts. Read from text once, where a row or a request is decoded; compared as a value
/// everywhere after.
public enum TargetKind: String, Sendable, CaseIterable {
    /// `to` with one token or a device-group notification key, or `registration_ids`; also users, which are
    /// expanded to their tokens at ingest.
    case tokens
    /// `to: "/topics/…"`.
    case topic
    /// `condition`.
    case condition

    /// A `messages.target_kind` as read back. The schema's CHECK admits these three only, and a binary refuses a
    /// schema other than its own, so any other text is a broken database.
    public init(stored text: String) {
        guard let kind = TargetKind(rawValue: text) else {
            preconditionFailure("messages.target_kind '\(text)' is not one of the kinds the schema allows")
        }
        self = kind
    }
}
