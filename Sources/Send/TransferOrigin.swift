import CCurl

/// One scheme, host and port the libcurl pool talks to: the requests waiting to be handed to curl, the transfers it
/// has, and the sockets open to it (curl's connection cache included). Owned by the pool's loop thread.
///
/// curl opens a new connection for every transfer that finds no idle one, all at once; so requests wait here and go
/// to curl only when a connection of the origin is idle (curl reuses it), or when fewer than `maxConnecting` are
/// connecting and the ramp lets one more be opening — its transfer has had no answer yet: an answer is what proves
/// that the server took the connection (without TLS, one in its accept queue looks connected).
final class TransferOrigin {
    /// Where a transfer that needed a new connection is.
    enum Opening {
        case none
        /// Its connection (TCP, TLS) is not ready yet.
        case connecting
        /// Its connection is ready, no answer has come on it yet.
        case unanswered
    }

    /// Connections being made at once, at most: a server whose accept queue is full drops the next SYN (its retry
    /// comes 1, 3, 7 s later), and while a few wait for that retry no more are tried, so the queue drains.
    static let maxConnecting = ConnectionRamp.initial

    let key: String
    var waiting = FIFO<PoolSubmission>()
    /// Transfers in curl.
    var busy = 0
    /// Transfers in curl that found no idle connection when they were handed over and have had no answer yet.
    var opening = 0
    /// Of those, the ones whose connection is not ready yet.
    var connecting = 0
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

    /// Whether the next request, which finds no idle connection, may go to curl to open one.
    var mayOpen: Bool { connecting < Self.maxConnecting && ramp.allows(opening: opening) }

    /// A transfer goes to curl; `opening` when it finds no idle connection.
    func handed(opening: Bool) -> Opening {
        busy += 1
        guard opening else { return .none }
        self.opening += 1
        connecting += 1
        return .connecting
    }

    /// A transfer's new connection is ready.
    func connected(_ state: inout Opening) {
        connecting -= 1
        state = .unanswered
    }

    /// The first answer on a transfer's new connection: the server takes connections.
    func answered(_ state: inout Opening) {
        if state == .connecting { connecting -= 1 }
        opening -= 1
        ramp.opened()
        state = .none
    }

    /// A transfer left curl. One whose new connection brought no answer sets the ramp back.
    func finished(_ state: Opening) {
        busy -= 1
        guard state != .none else { return }
        if state == .connecting { connecting -= 1 }
        opening -= 1
        ramp.restart()
    }

    /// The key requests to `url` share: its scheme, host (in lowercase) and port as written, as curl keys its
    /// connections. A URL it cannot split keys on its own text, which curl will refuse anyway.
    static func key(of url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return url[..<schemeEnd.upperBound].lowercased() + authority.lowercased()
    }
}
