import Queue
import Support

/// A message that passed validation: its target and the options Herald acts on, plus the payload to send.
public struct IncomingMessage: Sendable, Equatable {
    /// `app`, default `"default"`: 1...100 characters of `[A-Za-z0-9._-]`.
    public var app: String
    public var target: MessageTarget
    /// `.fid` when a v1 message named a Firebase Installation ID: the targets are FIDs, not tokens.
    public var tokenField: TokenField
    /// The shape the message came in: an FCM legacy message, or an FCM HTTP v1 `message`.
    public var format: MessageFormat
    /// The message as sent, minus its target (legacy: `to`, `registration_ids`, `condition`, `users` and `app`;
    /// v1: `token`, `fid`, `topic`, `condition`), in the sender's order. The sender adds the target of each request.
    public var payload: JSON
    public var collapseKey: String?
    public var priority: Priority
    /// 0...2419200 seconds.
    public var ttlSeconds: Int
    public var dryRun: Bool
    /// `send_at` as given, in Unix milliseconds: not sent before it (SPEC §23); nil sends it now.
    public var sendAt: Int64?

    public init(
        app: String = "default",
        target: MessageTarget,
        tokenField: TokenField = .token,
        format: MessageFormat = .legacy,
        payload: JSON = .object([]),
        collapseKey: String? = nil,
        priority: Priority = .normal,
        ttlSeconds: Int = 2_419_200,
        dryRun: Bool = false,
        sendAt: Int64? = nil
    ) {
        self.app = app
        self.target = target
        self.tokenField = tokenField
        self.format = format
        self.payload = payload
        self.collapseKey = collapseKey
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.dryRun = dryRun
        self.sendAt = sendAt
    }
}
