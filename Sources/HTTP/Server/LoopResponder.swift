import Synchronization

/// The `HTTPResponder` handed to the handler with one request: an HTTP/1.1 request (`stream` numbers it on a TLS
/// connection, and is 0 in the clear) or an HTTP/2 stream. It may be called from any thread; the first response is
/// posted to the connection's loop, later ones are ignored. It holds the request's share of the server's body budget
/// and gives it back with the answer: a body is counted for as long as the handler may be holding it.
final class LoopResponder: HTTPResponder {
    private let inbox: LoopInbox<LoopTask>
    private let server: ServerContext
    private let fd: CInt
    private let connectionID: UInt64
    private let stream: Int32
    private let reservedBodyBytes: Int
    private let answered = Atomic<Bool>(false)

    init(
        inbox: LoopInbox<LoopTask>, server: ServerContext, fd: CInt, connectionID: UInt64, stream: Int32,
        reservedBodyBytes: Int
    ) {
        self.inbox = inbox
        self.server = server
        self.fd = fd
        self.connectionID = connectionID
        self.stream = stream
        self.reservedBodyBytes = reservedBodyBytes
    }

    func respond(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Before the post, so a client that has read this answer finds the budget already given back.
        server.releaseBodyBytes(reservedBodyBytes)
        inbox.post(.respond(fd: fd, connectionID: connectionID, stream: stream, response: response))
    }

    /// A handler that lets go of a request without answering would leave the connection waiting forever.
    deinit {
        if !answered.load(ordering: .acquiring) {
            server.releaseBodyBytes(reservedBodyBytes)
            inbox.post(.respond(
                fd: fd, connectionID: connectionID, stream: stream, response: HTTPRequestError.unanswered.response))
        }
    }
}
