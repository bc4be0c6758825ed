import Synchronization

/// The `HTTPResponder` handed to the handler with one request. It may be called from any thread; the first
/// response is posted to the connection's event loop, later ones are ignored.
final class ConnectionResponder: HTTPResponder {
    private let loop: EventLoop
    private let fd: CInt
    private let connectionID: UInt64
    private let answered = Atomic<Bool>(false)

    init(loop: EventLoop, fd: CInt, connectionID: UInt64) {
        self.loop = loop
        self.fd = fd
        self.connectionID = connectionID
    }

    func respond(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.post(.respond(fd: fd, connectionID: connectionID, response: response))
    }

    /// A handler that lets go of a request without answering would leave the connection waiting forever.
    deinit {
        if !answered.load(ordering: .acquiring) {
            loop.post(.respond(fd: fd, connectionID: connectionID, response: HTTPRequestError.unanswered.response))
        }
    }
}
