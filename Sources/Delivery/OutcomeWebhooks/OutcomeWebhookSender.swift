import Classify
import Foundation
import OAuth
import Queue
import Send
import Support
import Synchronization

/// Sends the outcome webhooks (SPEC §23): each on a thread of its own, over a libcurl pool of their own, never the
/// apps' senders, so a slow or failing receiver holds up nothing but its own webhook.
///
/// Each webhook follows the outcome feed from its durable cursor (`outcome_webhooks`), forms batches of at most 100
/// outcomes (or what came within a second), records a batch as in flight before it sends it, and moves the cursor
/// past it only after a 2xx answer; failed batches are sent again under the same `webhook-id` with backoff and
/// jitter, `Retry-After` a minimum, until the feed's retention passes them (then skipped, counted and logged). With
/// several instances on one PostgreSQL, a lease in the webhook's row makes one instance at a time send it.
///
/// ```swift
/// let sender = OutcomeWebhookSender(webhooks: hooks, writer: writer, readers: readers, metrics: metrics,
///                                   options: .init(retentionMillis: 30 * 86_400_000))
/// sender.start()
/// ...
/// sender.stop(gracePeriod: 2)
/// ```
public final class OutcomeWebhookSender: Sendable {
    public struct Options: Sendable {
        /// How long the feed keeps outcomes: a batch not acknowledged by then is skipped.
        public var retentionMillis: Int64
        /// How long a webhook's lease lasts unless renewed (it is renewed well before).
        public var leaseMillis: Int64 = 30_000
        /// How often the feed is read for new outcomes while nothing else wakes the webhook.
        public var pollMillis: Int64 = 100
        /// A request with no answer by then fails (and is sent again later).
        public var timeoutMillis = 30_000
        /// Batches in flight per webhook at most.
        public var maxInFlight = 8

        public init(retentionMillis: Int64) { self.retentionMillis = retentionMillis }
    }

    private let runners: [WebhookRunner]
    private let pool: HTTPClientPool
    private let finished = DispatchGroup()

    public init(
        webhooks: [OutcomeWebhook], writer: any StoreWriter, readers: any StoreReaders, metrics: Metrics,
        options: Options
    ) {
        // A webhook's receiver answers in a few bytes; whatever it sends is read up to 64 KiB.
        let pool = HTTPClientPool(
            maxConnectionsPerHost: options.maxInFlight, maxResponseBytes: 64 << 10, name: "webhooks")
        let owner = "herald-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        self.pool = pool
        runners = webhooks.map {
            WebhookRunner(
                webhook: $0, owner: owner, writer: writer, readers: readers, metrics: metrics, pool: pool,
                options: options)
        }
    }

    public func start() {
        for runner in runners {
            finished.enter()
            let thread = Thread { [finished] in
                runner.run()
                finished.leave()
            }
            thread.name = "herald-webhook"
            thread.start()
        }
    }

    /// Stops every webhook: requests still unanswered after `gracePeriod` seconds are abandoned; their batches
    /// stay in flight in the database and are sent again, with the same ids, by the next process.
    public func stop(gracePeriod: Double) {
        for runner in runners { runner.stop() }
        pool.shutdown(gracePeriod: gracePeriod)
        finished.wait()
    }
}

/// One webhook's loop, on its own thread: everything but `deliver` and `stop` runs there.
private final class WebhookRunner: @unchecked Sendable {
    private let webhook: OutcomeWebhook
    private let owner: String
    private let writer: any StoreWriter
    private let readers: any StoreReaders
    private let metrics: Metrics
    private let pool: HTTPClientPool
    private let options: OutcomeWebhookSender.Options

    /// Answers from the pool's thread and the stop flag, under `signal`.
    private let signal = NSCondition()
    private var answers: [(through: Int64, result: TransportResult)] = []
    private var stopping = false

    /// The batches while this process holds the webhook's lease; nil otherwise.
    private var batches: WebhookBatches?
    /// When the lease is renewed next (a save renews it), or tried for again while another instance holds it.
    private var leaseDueAt: Int64 = 0
    /// The last page read that made no batch yet (not full, not a second old): the lag counts from it too.
    private var waiting: [OutcomeRecord] = []
    /// The latest failed attempt's code since the last save (stored with it, for `status` and the console).
    private var lastError: String?
    private var random = SystemRandomNumberGenerator()

    init(
        webhook: OutcomeWebhook, owner: String, writer: any StoreWriter, readers: any StoreReaders, metrics: Metrics,
        pool: HTTPClientPool, options: OutcomeWebhookSender.Options
    ) {
        (self.webhook, self.owner, self.writer, self.readers) = (webhook, owner, writer, readers)
        (self.metrics, self.pool, self.options) = (metrics, pool, options)
    }

    private var name: String { webhook.name }

    func run() {
        Log.info("outcome webhook", ["webhook": .string(name), "url": .string(webhook.url)])
        while !isStopping {
            var wake = Clock.nowMillis() + options.pollMillis
            do {
                try step()
                if let next = nextWake() { wake = min(wake, next) }
            } catch {
                // What the database holds is the truth: take it again from there (answers still coming are for
                // batches this state no longer has, and are ignored).
                Log.warn("outcome webhook failed; reading its state again", [
                    "webhook": .string(name), "error": .string("\(error)"),
                ])
                batches = nil
                wake = Clock.nowMillis() + 1_000
            }
            signal.lock()
            if answers.isEmpty && !stopping {
                _ = signal.wait(until: Date(timeIntervalSince1970: Double(wake) / 1000))
            }
            signal.unlock()
        }
    }

    func stop() {
        signal.lock()
        stopping = true
        signal.signal()
        signal.unlock()
    }

    private var isStopping: Bool {
        signal.lock()
        defer { signal.unlock() }
        return stopping
    }

    /// On the pool's thread: hands the answer to the webhook's thread.
    private func deliver(_ through: Int64, _ result: TransportResult) {
        signal.lock()
        answers.append((through, result))
        signal.signal()
        signal.unlock()
    }

    private func takeAnswers() -> [(through: Int64, result: TransportResult)] {
        signal.lock()
        defer { signal.unlock() }
        let taken = answers
        answers.removeAll()
        return taken
    }

    // MARK: - One pass

    /// Takes in the answers, skips what retention passed, forms new batches, saves the state when it changed (before
    /// any new batch is sent), and sends what is due.
    private func step() throws {
        let now = Clock.nowMillis()
        guard var batches = try held(now: now) else {
            _ = takeAnswers()
            return
        }
        var changed = false
        for (through, result) in takeAnswers() {
            if case .response(let status, _, _, _) = result, (200..<300).contains(status) {
                changed = batches.succeeded(through: through) || changed
            } else {
                batches.failed(
                    through: through, retryAfterUntil: RetryAfter.until(headers: Self.headers(result), now: now),
                    now: now, using: &random)
                lastError = Self.code(result)
                changed = true
            }
            metrics.increment("herald_outcome_webhook_requests_total", ["webhook": name, "code": Self.code(result)])
        }
        let skipped = batches.skip(before: now - options.retentionMillis)
        if skipped > 0 {
            Log.warn("outcome webhook: outcomes past the feed's retention skipped, never acknowledged", [
                "webhook": .string(name), "outcomes": .int(Int64(skipped)),
            ])
            metrics.increment("herald_outcome_webhook_skipped_total", ["webhook": name], by: Double(skipped))
            changed = true
        }
        waiting = []
        while batches.canForm {
            let page = try read(after: batches.formedThrough)
            guard batches.form(page: page, carries: webhook.carries, now: now) else {
                waiting = page
                break
            }
            changed = true
        }
        if changed || now >= leaseDueAt {
            guard try save(batches, skipped: skipped, now: now) else { return }
        }
        for batch in batches.takeDue(now: now) { send(batch) }
        self.batches = batches
        let oldest = batches.oldestPendingAt ?? waiting.first(where: webhook.carries)?.at
        metrics.set(
            "herald_outcome_webhook_lag_seconds", ["webhook": name],
            to: oldest.map { Double(max(0, now - $0)) / 1000 } ?? 0)
    }

    /// When the loop should look again before the next poll: a batch due, or a page that will have waited its second.
    private func nextWake() -> Int64? {
        let retry = batches?.nextDue
        let page = waiting.first.map { $0.at + WebhookBatches.maxWaitMillis }
        return [retry, page].compactMap { $0 }.min()
    }

    /// The batches while the lease is held; takes the lease (and the batches left in flight) when it is free.
    private func held(now: Int64) throws -> WebhookBatches? {
        if let batches { return batches }
        guard now >= leaseDueAt else { return nil }
        let (name, owner, until) = (name, owner, now + options.leaseMillis)
        guard let state = try writer.write({ try $0.leaseOutcomeWebhook(name, owner: owner, until: until, now: now) })
        else {
            leaseDueAt = now + options.leaseMillis / 6
            return nil
        }
        var batches = WebhookBatches(acknowledged: state.seq, maxInFlight: options.maxInFlight)
        for through in state.inFlight where through > batches.formedThrough {
            batches.restore(through: through, page: try read(after: batches.formedThrough), carries: webhook.carries,
                            now: now)
        }
        Log.info("outcome webhook: sending from the feed's seq", [
            "webhook": .string(name), "seq": .int(state.seq), "batches_in_flight": .int(Int64(state.inFlight.count)),
        ])
        leaseDueAt = 0
        return batches
    }

    /// Stores the cursor and the batches in flight, renewing the lease; false (and the state dropped) when another
    /// instance took the lease meanwhile.
    private func save(_ batches: WebhookBatches, skipped: Int, now: Int64) throws -> Bool {
        let (name, owner, until) = (name, owner, now + options.leaseMillis)
        let (seq, inFlight, lastError) = (batches.acknowledged, batches.inFlight, lastError)
        let saved = try writer.write {
            try $0.saveOutcomeWebhook(
                name, owner: owner, seq: seq, inFlight: inFlight, skipped: Int64(skipped), lastError: lastError,
                until: until, now: now)
        }
        self.lastError = nil
        guard saved else {
            Log.warn("outcome webhook: another instance took its lease", ["webhook": .string(name)])
            self.batches = nil
            leaseDueAt = now + options.leaseMillis / 6
            return false
        }
        leaseDueAt = now + options.leaseMillis / 3
        return true
    }

    private func read(after seq: Int64) throws -> [OutcomeRecord] {
        let app = webhook.app
        return try readers.read { try $0.outcomes(after: seq, app: app, limit: WebhookBatches.maxOutcomes) }
    }

    // MARK: - Requests

    /// POSTs the batch, signed for this attempt (`webhook-timestamp` is now; id and body are the batch's own).
    private func send(_ batch: WebhookBatches.Batch) {
        let id = batch.id(webhook: name)
        let body = batch.body
        let timestamp = Clock.nowMillis() / 1000
        let request: OutboundRequest
        do {
            request = OutboundRequest(
                url: webhook.url,
                headers: [
                    ("Content-Type", "application/json"), ("webhook-id", id), ("webhook-timestamp", "\(timestamp)"),
                    ("webhook-signature", try webhook.secret.signature(id: id, timestamp: timestamp, body: body)),
                ],
                body: body, timeoutMillis: options.timeoutMillis, keptResponseHeaders: ["retry-after"])
        } catch {
            return deliver(batch.through, .failure(.other("\(error)")))
        }
        pool.submit(request) { [weak self] result, _ in self?.deliver(batch.through, result) }
    }

    private static func headers(_ result: TransportResult) -> [(name: String, value: String)] {
        if case .response(_, let headers, _, _) = result { headers } else { [] }
    }

    private static func code(_ result: TransportResult) -> String {
        switch result {
        case .response(let status, _, _, _): String(status)
        case .failure(let failure): "\(failure)"
        }
    }
}
