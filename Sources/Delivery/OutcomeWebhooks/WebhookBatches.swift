import Classify
import Queue
import Support

/// The batches of one outcome webhook between its durable cursor and the end of the feed: which to form, which to
/// send or send again and when, how far the receiver has acknowledged. Pure (events in, state out; randomness from
/// the caller), as `Outbox` is; `OutcomeWebhookSender` does the reading, writing and sending.
///
/// A batch is the feed's range (`after`, `through`] read in one page — at most `maxOutcomes` entries — and the
/// outcomes of it that the webhook carries. Its `webhook-id` and body follow from the range alone, so the same batch
/// formed again after a restart (`restore`) is the same request. The cursor (`acknowledged`) passes a batch only
/// once it and every batch before it were answered 2xx (or skipped).
struct WebhookBatches {
    struct Batch: Equatable {
        /// The range of the feed it covers: seqs above `after`, up to `through`.
        let after: Int64
        let through: Int64
        /// The outcomes in the range the webhook carries, in seq order (possibly none: then nothing is sent).
        let outcomes: [OutcomeRecord]
        var attempts = 0
        /// When it is (next) sent.
        var dueAt: Int64
        var sending = false
        var done: Bool

        /// When the oldest outcome in it happened.
        var oldestAt: Int64? { outcomes.first?.at }
    }

    /// Outcomes in one batch at most (SPEC §23).
    static let maxOutcomes = 100
    /// How long a batch that is not full waits for more, from its oldest outcome (SPEC §23: 100 outcomes or 1 s).
    static let maxWaitMillis: Int64 = 1_000
    /// The backoff between attempts of one batch: 1 s doubling to 5 min, with jitter (SPEC §5's rule).
    static let retryPolicy = RetryPolicy(baseMillis: 1_000, capMillis: 300_000)

    /// Every outcome up to this seq was acknowledged or skipped.
    private(set) var acknowledged: Int64
    /// Batches formed past `acknowledged`, in order, contiguous.
    private(set) var batches: [Batch] = []
    /// Batches in flight (formed and not yet passed by the cursor) at most.
    let maxInFlight: Int

    init(acknowledged: Int64, maxInFlight: Int = 8) {
        (self.acknowledged, self.maxInFlight) = (acknowledged, maxInFlight)
    }

    /// Where the next batch's range starts.
    var formedThrough: Int64 { batches.last?.through ?? acknowledged }

    /// The last seq of each batch formed and not yet passed by the cursor: what `outcome_webhooks.in_flight` keeps.
    var inFlight: [Int64] { batches.map(\.through) }

    /// Whether another batch may be formed now.
    var canForm: Bool { batches.count < maxInFlight }

    /// Forms the next batch from `page`, the feed read after `formedThrough` (seq order, at most `maxOutcomes`):
    /// when the page is full, or when its oldest entry has waited `maxWaitMillis`. Returns whether it did.
    mutating func form(page: [OutcomeRecord], carries: (OutcomeRecord) -> Bool, now: Int64) -> Bool {
        guard canForm, let last = page.last, page.count >= Self.maxOutcomes || page[0].at + Self.maxWaitMillis <= now
        else { return false }
        append(through: last.seq, outcomes: page.filter(carries), now: now)
        return true
    }

    /// A batch that was in flight when the last process stopped, formed again for the range up to `through` from
    /// `page`, the feed read after `formedThrough` (entries past `through` are ignored).
    mutating func restore(through: Int64, page: [OutcomeRecord], carries: (OutcomeRecord) -> Bool, now: Int64) {
        append(through: through, outcomes: page.filter { $0.seq <= through && carries($0) }, now: now)
    }

    private mutating func append(through: Int64, outcomes: [OutcomeRecord], now: Int64) {
        batches.append(
            Batch(after: formedThrough, through: through, outcomes: outcomes, dueAt: now, done: outcomes.isEmpty))
        advance()
    }

    /// The batches to send now (due, not done, not already being sent), each marked as being sent.
    mutating func takeDue(now: Int64) -> [Batch] {
        var due: [Batch] = []
        for index in batches.indices where !batches[index].done && !batches[index].sending
            && batches[index].dueAt <= now {
            batches[index].sending = true
            due.append(batches[index])
        }
        return due
    }

    /// The receiver answered 2xx to the batch ending at `through`. Returns whether the cursor moved.
    @discardableResult
    mutating func succeeded(through: Int64) -> Bool {
        guard let index = batches.firstIndex(where: { $0.through == through }) else { return false }
        batches[index].sending = false
        batches[index].done = true
        return advance()
    }

    /// The batch ending at `through` failed (any other answer, or none): it is sent again after the backoff for
    /// its attempts, or at `retryAfterUntil` plus up to a second of jitter when that is later.
    mutating func failed(
        through: Int64, retryAfterUntil: Int64?, now: Int64, using random: inout some RandomNumberGenerator
    ) {
        guard let index = batches.firstIndex(where: { $0.through == through }) else { return }
        batches[index].sending = false
        batches[index].attempts += 1
        var wait = Self.retryPolicy.backoff(attempt: batches[index].attempts, slow: false, using: &random)
        if let retryAfterUntil {
            wait = max(wait, retryAfterUntil - now + Int64.random(in: 0...1_000, using: &random))
        }
        batches[index].dueAt = now + wait
    }

    /// Gives up on the batches waiting for another attempt whose oldest outcome happened before `cutoff` (the
    /// feed's retention has passed them). Returns how many outcomes were skipped.
    mutating func skip(before cutoff: Int64) -> Int {
        var skipped = 0
        for index in batches.indices where !batches[index].done && !batches[index].sending
            && (batches[index].oldestAt ?? cutoff) < cutoff {
            batches[index].done = true
            skipped += batches[index].outcomes.count
        }
        if skipped > 0 { advance() }
        return skipped
    }

    /// The earliest time a batch waiting for another attempt is due.
    var nextDue: Int64? {
        batches.filter { !$0.done && !$0.sending }.map(\.dueAt).min()
    }

    /// When the oldest outcome not yet acknowledged happened, of those formed into batches.
    var oldestPendingAt: Int64? {
        batches.lazy.filter { !$0.done }.compactMap(\.oldestAt).first
    }

    /// Moves the cursor over the batches done at the front. Returns whether it moved.
    @discardableResult
    private mutating func advance() -> Bool {
        var moved = false
        while let first = batches.first, first.done {
            acknowledged = first.through
            batches.removeFirst()
            moved = true
        }
        return moved
    }
}

extension WebhookBatches.Batch {
    /// The `webhook-id`: the webhook's name and the batch's range, the same for every attempt and after a restart,
    /// so the receiver can drop a repeat.
    func id(webhook name: String) -> String {
        "outcomes-\(name == OutcomeWebhookState.serviceWide ? "all" : name)-\(after)-\(through)"
    }

    /// The Standard Webhooks payload: `{"type": "outcomes", "timestamp", "data": [feed items]}`, its timestamp
    /// the newest outcome's time, so the body too is the same on every attempt.
    var body: [UInt8] {
        let newest = outcomes.last?.at ?? 0
        var bytes: [UInt8] = []
        JSON.object([
            ("type", .string("outcomes")),
            ("timestamp", .string(ISO8601.millis(newest))),
            ("data", .array(outcomes.map(\.json))),
        ]).append(to: &bytes)
        return bytes
    }
}
