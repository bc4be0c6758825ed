/// One HTTP POST for the sender pool to make.
///
/// ```swift
/// let request = OutboundRequest(
///     url: "https://fcm.googleapis.com/fcm/send",
///     headers: [("Content-Type", "application/json"), ("Authorization", "key=…")],
///     body: Array(payload.utf8))
/// ```
///
/// Header values may carry secrets (`Authorization`); the pool never logs them.
public struct OutboundRequest: Sendable {
    public var url: String
    /// Sent in order. An empty value is sent as an empty header (`Name;` in curl's terms), not dropped.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole request, queueing for a connection included.
    public var timeoutMillis: Int = 30_000
    public var connectTimeoutMillis: Int = 10_000
    /// The response headers the caller reads (lowercase names); nil: all of them. The others are skipped as they
    /// arrive rather than each copied into two strings, which at thousands of answers a second shows.
    public var keptResponseHeaders: [String]?

    public init(
        url: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = [],
        timeoutMillis: Int = 30_000,
        connectTimeoutMillis: Int = 10_000,
        keptResponseHeaders: [String]? = nil
    ) {
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMillis = timeoutMillis
        self.connectTimeoutMillis = connectTimeoutMillis
        self.keptResponseHeaders = keptResponseHeaders
    }
}
