import CCurl

/// One scheme, host and port the libcurl pool talks to: the requests waiting to be handed to curl, the transfers it
/// has, and the sockets open to it (curl's connection cache included). Owned by the pool's loop thread.
///
/// curl opens a new connection for every transfer that finds no idle one, all at once; so requests wait here and go
/// to curl only when a connection of the origin is idle (curl reuses it) or the ramp lets one more be opening — one
/// whose transfer has had no answer yet (an answer is what proves that the server took the connection: without TLS,
/// a connection in its accept queue looks connected).
final class TransferOrigin {
    let key: String
    var waiting = FIFO<PoolSubmission>()
    /// Transfers in curl.
    var busy = 0
    /// Transfers in curl that found no idle connection when they were handed over and have had no answer yet.
    var opening = 0
    var ramp: ConnectionRamp
    /// Where curl's socket callbacks count the origin's sockets; freed with it, once none is open.
    let counter: UnsafeMutablePointer<herald_socket_counter>

    init(key: String, maxConnections: Int, poolCounter: UnsafeMutablePointer<Int>) {
        self.key = key
        ramp = ConnectionRamp(ceiling: maxConnections)
        counter = .allocate(capacity: 1)
        counter.initialize(to: herald_socket_counter(pool: poolCounter, origin: 0))
    }

    deinit {
        counter.deallocate()
    }

    /// Sockets open to it, busy or idle.
    var sockets: Int { counter.pointee.origin }

    /// An idle connection is there for the next request: more sockets than transfers (a transfer holds at most one
    /// socket once connected).
    var hasIdleConnection: Bool { sockets > busy }

    /// Nothing waits, nothing is in curl, no socket is open: nothing of it is left to keep.
    var isForgettable: Bool { waiting.isEmpty && busy == 0 && sockets == 0 }

    /// The key requests to `url` share: its scheme, host (in lowercase) and port as written, as curl keys its
    /// connections. A URL it cannot split keys on its own text, which curl will refuse anyway.
    static func key(of url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return url[..<schemeEnd.upperBound].lowercased() + authority.lowercased()
    }
}
