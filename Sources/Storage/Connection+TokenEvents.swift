/// One change reconciliation made to the token registry.
public struct TokenEventRecord: Sendable, Equatable {
    public var id: Int64
    public var at: Int64
    public var app: String
    public var token: String
    public var kind: String
    public var replacement: String?
    public var reason: String?
    public var messageID: String?

    public init(
        id: Int64, at: Int64, app: String, token: String, kind: String, replacement: String?, reason: String?,
        messageID: String?
    ) {
        (self.id, self.at, self.app, self.token, self.kind) = (id, at, app, token, kind)
        (self.replacement, self.reason, self.messageID) = (replacement, reason, messageID)
    }
}

extension Connection {
    /// Events with an id above `after`, oldest first.
    public func tokenEvents(after: Int64, limit: Int) throws -> [TokenEventRecord] {
        try query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE id > ? ORDER BY id LIMIT ?
            """, [.integer(after), .integer(Int64(limit))]
        ) {
            TokenEventRecord(
                id: $0.int64(0), at: $0.int64(1), app: $0.string(2), token: $0.string(3), kind: $0.string(4),
                replacement: $0.optionalString(5), reason: $0.optionalString(6), messageID: $0.optionalString(7))
        }
    }
}
