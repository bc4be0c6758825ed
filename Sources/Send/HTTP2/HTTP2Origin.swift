/// One host and port the pool talks to: its connections, and the requests waiting for a stream on one of them.
/// Owned by the loop thread.
final class HTTP2Origin {
    let host: String
    let port: Int
    var connections: [HTTP2Connection] = []
    /// Requests not on a stream yet, oldest first (a refused one goes back to the front).
    var waiting = StreamQueue()
    /// Until then (monotonic seconds) requests that no HTTP/2 connection has room for go to the HTTP/1.1 pool: the
    /// server chose HTTP/1.1 in a recent handshake.
    var http1Until = 0.0
    /// No new connection before this (monotonic seconds): one just failed.
    var noConnectionsBefore = 0.0
    /// The request headers last encoded, reused while they stay the same (every request of one app
    /// with one access token).
    let requestHeaders = HTTP2RequestHeaders()

    /// How long a server that chose HTTP/1.1 is sent HTTP/1.1 before h2 is offered again.
    static let http1Seconds = 60.0

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Connections still resolving, connecting, in their TLS handshake or waiting for the server's SETTINGS.
    var opening: Int {
        connections.reduce(0) { $0 + ($1.isOpening ? 1 : 0) }
    }
}

/// A FIFO of streams with a cheap take from the front and a put back there.
struct StreamQueue {
    private var items: [HTTP2Stream] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: HTTP2Stream? { isEmpty ? nil : items[head] }

    mutating func append(_ stream: HTTP2Stream) {
        items.append(stream)
    }

    mutating func popFirst() -> HTTP2Stream? {
        guard !isEmpty else { return nil }
        let stream = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return stream
    }

    mutating func pushFront(_ stream: HTTP2Stream) {
        if head > 0 {
            head -= 1
            items[head] = stream
        } else {
            items.insert(stream, at: 0)
        }
    }

    /// Takes out every stream `predicate` holds for, keeping the others in order.
    mutating func removeAll(where predicate: (HTTP2Stream) -> Bool) -> [HTTP2Stream] {
        var removed: [HTTP2Stream] = []
        var kept: [HTTP2Stream] = []
        for stream in items[head...] {
            if predicate(stream) { removed.append(stream) } else { kept.append(stream) }
        }
        if !removed.isEmpty {
            items = kept
            head = 0
        }
        return removed
    }
}
