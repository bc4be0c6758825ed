import Send
import Support

/// What `serve` hands every app's settings when it builds their senders.
public struct ProviderContext: Sendable {
    /// Requests in flight to one origin at most, by default (SPEC §19).
    public static let defaultOriginConcurrency = 100

    /// How long a request to a provider may wait for its answer.
    public var requestTimeoutMillis: Int
    /// The HTTP/1.1 pool for OAuth token requests, shared by the apps that need one (made on first use).
    public let tokenPool: @Sendable () -> HTTPClientPool

    public init(requestTimeoutMillis: Int, tokenPool: @escaping @Sendable () -> HTTPClientPool) {
        self.requestTimeoutMillis = requestTimeoutMillis
        self.tokenPool = tokenPool
    }
}
