import Synchronization

/// The `HTTPResponder` handed to the handler with one request that came over TLS: an HTTP/2 stream, or one HTTP/1.1
/// request. As `ConnectionResponder`: any thread, the first response counts, the request's share of the body budget
/// goes back with it, and a responder let go unanswered answers 500.
final class TLSResponder: HTTPResponder {
    private let loop: TLSLoop
    private let fd: CInt
    private let connectionID: UInt64
    private let stream: Int32
    private let reservedBodyBytes: Int
    private let answered = Atomic<Bool>(false)

    init(loop: TLSLoop, fd: CInt, connectionID: UInt64, stream: Int32, reservedBodyBytes: Int) {
        self.loop = loop
        self.fd = fd
        self.connectionID = connectionID
        self.stream = stream
        self.reservedBodyBytes = reservedBodyBytes
    }

    func respond(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.context.server.releaseBodyBytes(reservedBodyBytes)
        loop.post(.respond(fd: fd, connectionID: connectionID, stream: stream, response: response))
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            loop.context.server.releaseBodyBytes(reservedBodyBytes)
            loop.post(.respond(
                fd: fd, connectionID: connectionID, stream: stream, response: HTTPRequestError.unanswered.response))
        }
    }
}
