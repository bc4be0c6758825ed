import Support

/// A message that passed validation: its target and the options Herald acts on, plus the payload to send.
public struct IncomingMessage: Sendable, Equatable {
    /// `app`, default `"default"`: 1...100 characters of `[A-Za-z0-9._-]`.
    public var app: String
    public var target: MessageTarget
    /// The message as sent, minus `to`, `registration_ids`, `condition`, `users` and `app`, in the sender's order.
    /// The sender adds the target of each request to it.
    public var payload: JSON
    public var collapseKey: String?
    /// `"normal"` or `"high"`.
    public var priority: String
    /// 0...2419200 seconds.
    public var ttlSeconds: Int
    public var dryRun: Bool

    public init(
        app: String = "default",
        target: MessageTarget,
        payload: JSON = .object([]),
        collapseKey: String? = nil,
        priority: String = "normal",
        ttlSeconds: Int = 2_419_200,
        dryRun: Bool = false
    ) {
        self.app = app
        self.target = target
        self.payload = payload
        self.collapseKey = collapseKey
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.dryRun = dryRun
    }
}
