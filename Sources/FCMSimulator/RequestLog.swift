/// The most recent requests, bounded by count and by the tokens they hold together, oldest dropped first.
/// Appending is amortized O(1): dropped entries are released at once and compacted away in bulk.
struct RequestLog: Sendable {
    private let limit: Int
    private let tokenLimit: Int
    private var entries: [FCMSimulator.ReceivedRequest] = []
    private var start = 0
    private var tokens = 0

    init(limit: Int, tokenLimit: Int) {
        self.limit = max(0, limit)
        self.tokenLimit = max(0, tokenLimit)
    }

    /// The kept requests in arrival order, or only the last `count` of them.
    func requests(last count: Int? = nil) -> [FCMSimulator.ReceivedRequest] {
        let kept = entries[start...]
        return Array(count.map { kept.suffix(max(0, $0)) } ?? kept)
    }

    mutating func append(_ request: FCMSimulator.ReceivedRequest) {
        guard limit > 0 else { return }
        entries.append(request)
        tokens += request.tokens.count
        // The newest request stays even when it alone holds more than tokenLimit tokens.
        while entries.count - start > limit || (tokens > tokenLimit && entries.count - start > 1) {
            tokens -= entries[start].tokens.count
            entries[start].tokens = []
            entries[start].message = nil
            start += 1
        }
        if start >= 1024 && start * 2 >= entries.count {
            entries.removeFirst(start)
            start = 0
        }
    }
}
