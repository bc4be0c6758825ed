/// One request: waiting for a stream, then on one, until it completes. Owned by the loop thread; the connection
/// carrying it finds it by stream id, and nghttp2's callbacks record the response into it.
final class HTTP2Stream {
    let request: OutboundRequest
    let target: HTTPSTarget
    let completion: @Sendable (TransportResult, Double) -> Void
    let submittedAt: Double
    /// Monotonic seconds after which it fails as `timeout`, waiting or not.
    let deadline: Double
    /// `request.keptResponseHeaders` as bytes (nil: all).
    let keptNames: [[UInt8]]?

    /// The stream id while it is on a connection.
    var id: Int32 = 0
    /// How much of the body nghttp2 has taken for DATA frames.
    var bodyOffset = 0
    /// Times the server refused it unprocessed, so it was sent again.
    var refusals = 0
    /// Completed (answered, timed out, cancelled): a later end of its stream changes nothing.
    var finished = false

    // MARK: - The response so far

    var status = 0
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// Bytes of header fields received, bounded by `HTTP2Connection.maxHeaderListSize`.
    var headerBytes = 0
    /// The final (non-1xx) header block has arrived: what comes after the body is trailers, not kept.
    var headersDone = false
    /// The server ended its side (END_STREAM): with a final status, a whole response.
    var remoteEnded = false

    init(_ submission: PoolSubmission, target: HTTPSTarget, keptNames: [[UInt8]]?) {
        request = submission.request
        self.target = target
        completion = submission.completion
        submittedAt = submission.submittedAt
        deadline = submission.submittedAt + Double(max(1, submission.request.timeoutMillis)) / 1_000
        self.keptNames = keptNames
    }

    /// Forgets what a refused attempt did, before the request goes out again.
    func resetForResend() {
        id = 0
        bodyOffset = 0
        status = 0
        headers.removeAll()
        body.removeAll()
        headerBytes = 0
        headersDone = false
        remoteEnded = false
    }

    /// Whether the response header `name` (lowercase, as HTTP/2 sends it) is one the request keeps.
    func keeps(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let keptNames else { return true }
        return keptNames.contains { $0.elementsEqual(name) }
    }
}
