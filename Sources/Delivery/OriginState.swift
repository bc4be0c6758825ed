/// What a Web Push app's scheduler knows of one push-service origin, the fault domain below the app (SPEC §19): its
/// gate, its pause, its requests in flight against its share of the app's, and the claimed requests waiting for it.
struct OriginState {
    var gate = Gate()
    /// Paused after refusing the sender for several different subscriptions in a row; until the app is resumed.
    var paused = false
    var inFlight = 0
    /// The subscriptions refused (401, 403) since the origin last accepted a push, each once, in order.
    var refused: [String] = []
    /// The last subscriptions refused, kept across the origin's successes (at most `refusedKept`): one refused again
    /// after others were accepted is singled out (`AppScheduler.singledOut`).
    private(set) var refusedBefore: [String] = []
    static let refusedKept = 256
    /// A claimed request over the origin's share, and since when it waits for one of the origin's requests to end.
    struct Parked {
        let request: PreparedRequest
        let since: Int64
    }

    /// Claimed requests over the origin's share, oldest first.
    var waiting = PendingQueue<Parked>()
    /// Since when its share has been taken; nil while it has room. How long its requests take to end is how long
    /// the requests that waited too long behind its share are deferred.
    var fullSince: Int64?

    /// Nothing here that sending needs to remember once its gate has been open a while: it may be forgotten.
    func isIdle(now: Int64, after quiet: Int64) -> Bool {
        inFlight == 0 && waiting.isEmpty && !paused && refused.isEmpty && gate.until + quiet <= now
    }

    /// Resumed: every subscription gets a fresh start.
    mutating func forgetRefusals() {
        refused.removeAll()
        refusedBefore.removeAll()
    }

    mutating func rememberRefused(_ token: String) {
        guard !refusedBefore.contains(token) else { return }
        if refusedBefore.count >= Self.refusedKept { refusedBefore.removeFirst() }
        refusedBefore.append(token)
    }
}
