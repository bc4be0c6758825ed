/// How an `HTTPSServer` listens, what it proves itself with, and what it tolerates from clients.
///
/// ```swift
/// var configuration = HTTPSServerConfiguration(
///     address: .tcp(host: "127.0.0.1", port: 0), identity: try .selfSigned(names: ["127.0.0.1", "localhost"]))
/// configuration.maxConcurrentStreams = 100   // as Apple's APNs does
/// ```
public struct HTTPSServerConfiguration: Sendable {
    /// The address, threads and limits, read as `HTTPServer` reads them: `maxConnections` (over it a connection is
    /// closed before its handshake), `maxHeaderBytes` (a request head, or an HTTP/2 header list; then 431),
    /// `headerTimeout` (a request head or HTTP/2 header block, then 408; also the time the TLS handshake may take),
    /// `bodyTimeout` (a request body over either protocol, then 408), `idleTimeout` (a connection with no request in
    /// hand; an HTTP/2 answer the client's flow-control windows hold back, then the stream is reset),
    /// `maxBodyBytesInFlight` (the body budget, shared by every stream and connection).
    public var server: HTTPServerConfiguration
    public var identity: TLSIdentity
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` of every HTTP/2 connection: streams a client may have open at once.
    public var maxConcurrentStreams: Int

    public init(address: ListenAddress, identity: TLSIdentity, maxConcurrentStreams: Int = 1000) {
        self.server = HTTPServerConfiguration(address: address)
        self.identity = identity
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    /// The most `maxConcurrentStreams` may be (a SETTINGS value is 31 bits; nghttp2 keeps a stream's state for each).
    public static let streamLimit = 1 << 20
}
