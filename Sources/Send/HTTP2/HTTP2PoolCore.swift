import Posix
import Synchronization

/// What `HTTP2ClientPool`, the resolver and the loop thread share: the pool's shell (mailbox, in-flight count,
/// wake-up), with DNS answers as its notes, and the counts read from any thread. Everything else belongs to the
/// loop thread alone.
final class HTTP2PoolCore: Sendable {
    /// A host name looked up for a connection that is opening: its addresses, or why there are none.
    struct Resolution: Sendable {
        var connection: Int
        var addresses: Result<[SocketAddress], SocketAddress.ResolveError>
    }

    let shell: PoolShell<Resolution>
    let maxConnectionsPerHost: Int
    /// Connections to every origin together, HTTP/1.1 ones included, at most (nil: only `maxConnectionsPerHost`).
    let maxConnections: Int?
    /// The largest response body read; a longer one fails its request as `responseTooLarge`.
    let maxResponseBytes: Int
    let http1Connections: Int
    let caFile: String?
    /// The certificate its TLS connections present to servers that ask for one; nil: none.
    let clientIdentity: TLSClientIdentity?
    let liveness: HTTP2Liveness
    /// The pool's own DNS: no other pool's names hold up its connections.
    let resolver: Resolver
    /// Where its connections may go when its origins are strangers' (Web Push); nil: the hosts the operator named.
    let addressPolicy: AddressPolicy?
    let statistics = HTTP2Counters()
    /// HTTP/2 sockets open (connecting included); kept by the loop thread.
    let openConnections = Atomic<Int>(0)
    /// The HTTP/1.1 pool for requests this client does not carry, made by the loop thread on first use.
    let fallback = Mutex<HTTPClientPool?>(nil)

    var name: String { shell.name }

    init(
        name: String, maxConnectionsPerHost: Int, maxConnections: Int?, maxResponseBytes: Int, http1Connections: Int,
        caFile: String?, clientIdentity: TLSClientIdentity?, liveness: HTTP2Liveness, addressPolicy: AddressPolicy?
    ) {
        shell = PoolShell(name: name)
        resolver = Resolver(name: name)
        self.addressPolicy = addressPolicy
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxConnections = maxConnections
        self.maxResponseBytes = maxResponseBytes
        self.http1Connections = http1Connections
        self.caFile = caFile
        self.clientIdentity = clientIdentity
        self.liveness = liveness
    }
}
