/// One request: waiting for a stream, then on one, until it completes. Owned by the loop thread; the connection
/// carrying it finds it by stream id.
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
    var id: UInt32 = 0
    /// How much of the body has gone out in DATA frames.
    var bodyOffset = 0
    /// What the server lets it send (its SETTINGS_INITIAL_WINDOW_SIZE, plus its WINDOW_UPDATEs, less the DATA
    /// sent). May go below zero when the server lowers the initial window.
    var sendWindow = 0
    /// What it may still receive before the client's next WINDOW_UPDATE.
    var receiveWindow = 0
    /// Waiting in its connection's list for send window to finish its body.
    var blocked = false
    /// Times the server refused it unprocessed, so it was sent again.
    var refusals = 0
    /// Completed (answered, timed out, cancelled): a later end of its stream changes nothing.
    var finished = false

    // MARK: - The response so far

    var status = 0
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// The final (non-1xx) header block has arrived: what comes after the body is trailers, not kept.
    var headersDone = false

    init(_ submission: HTTP2PoolCore.Submission, target: HTTPSTarget, keptNames: [[UInt8]]?) {
        request = submission.request
        self.target = target
        completion = submission.completion
        submittedAt = submission.submittedAt
        deadline = submission.submittedAt + Double(max(1, submission.request.timeoutMillis)) / 1_000
        self.keptNames = keptNames
    }

    var bodySent: Bool { bodyOffset == request.body.count }

    /// Forgets what a refused attempt did, before the request goes out again.
    func resetForResend() {
        id = 0
        bodyOffset = 0
        sendWindow = 0
        receiveWindow = 0
        blocked = false
        status = 0
        headers.removeAll()
        body.removeAll()
        headersDone = false
    }

    /// Whether the response header `name` (lowercase, as HTTP/2 sends it) is one the request keeps.
    func keeps(_ name: [UInt8]) -> Bool {
        guard let keptNames else { return true }
        return keptNames.contains(name)
    }
}
