/// How many new connections to one origin may be opening at once: a few at first, one more each time one of them
/// opens (the server took it), and a few again after one failed or once the origin has no connection left — TCP's
/// slow start, for connections. A burst of requests then never sends a server more connection attempts at once than
/// it has shown it takes, so none is left in its accept queue (TCP's SYN retries: 1, 3, 7, 15 s…) until its request
/// times out and is sent again; and a connection freed meanwhile takes a waiting request before a new one opens.
///
/// ```swift
/// var ramp = ConnectionRamp(ceiling: 64)
/// ramp.allows(opening: 2)   // false: two are opening already
/// ramp.opened()             // one of them opened: three may be opening now
/// ```
struct ConnectionRamp {
    static let initial = 2

    private(set) var limit = ConnectionRamp.initial
    /// The limit grows no further (the pool's connections per origin).
    let ceiling: Int

    init(ceiling: Int) {
        self.ceiling = max(Self.initial, ceiling)
    }

    /// Whether one more may start opening while `opening` are.
    func allows(opening: Int) -> Bool {
        opening < limit
    }

    /// A new connection opened: the server takes connections, one more may be opening at once.
    mutating func opened() {
        limit = min(ceiling, limit + 1)
    }

    /// One failed to open, or none is left: start over from a few.
    mutating func restart() {
        limit = Self.initial
    }
}
