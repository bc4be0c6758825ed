import Classify
import Dispatch
import Foundation
import Send
import Storage
import Support
import Synchronization

/// Claims ready deliveries, sends them through each app's provider, and writes back what FCM answered.
///
/// All scheduling state lives on one serial dispatch queue; SQLite work goes to the writer and reader threads and
/// HTTP to the client pool's thread, so nothing here blocks. Ingest wakes the engine after each commit; otherwise
/// it sleeps until the earliest `next_attempt_at` or gate it knows of, with a one-second look at the `apps` table
/// so a `herald resume` or a requeue from the CLI is seen within a second.
public final class DeliveryEngine: @unchecked Sendable {
    public struct App: Sendable {
        public var name: String
        public var provider: any Provider
        public var concurrency: Int
        /// Sends per second at most (a token bucket), to stay under a known FCM quota instead of collecting 429s;
        /// nil: as fast as `concurrency` allows.
        public var maxRate: Double?

        public init(name: String, provider: any Provider, concurrency: Int, maxRate: Double? = nil) {
            self.name = name
            self.provider = provider
            self.concurrency = concurrency
            self.maxRate = maxRate
        }
    }

    public struct Options: Sendable {
        /// Rows leased per claim (one multicast request's worth).
        public var claimLimit = 1000
        /// How long a lease lasts unless renewed; the rescuer hands out again only rows whose lease nobody renewed.
        /// Held leases are renewed, and expired ones rescued, four times per lease.
        public var leaseMillis: Int64 = 120_000
        public var policy = RetryPolicy()
        /// Gate after a 5xx or transport failure without Retry-After: 1 s doubling per consecutive failure, capped.
        public var gateBaseMillis: Int64 = 1_000
        public var gateCapMillis: Int64 = 60_000
        /// Gate after a quota error (429 `QUOTA_EXCEEDED`) without Retry-After: 1 minute, as FCM asks, doubling per
        /// consecutive quota gate, capped.
        public var quotaGateBaseMillis: Int64 = 60_000
        public var quotaGateCapMillis: Int64 = 960_000
        /// How often the `apps` table and due rows are looked at.
        public var tickMillis = 1_000
        /// Other instances deliver from the same database (PostgreSQL): leases not this process's are left alone.
        public var sharedQueue = false

        public init() {}
    }

    /// Per-app scheduling state; only touched on `queue` (hence unchecked).
    private final class Runtime: @unchecked Sendable {
        let app: App
        /// This app's own connections to its endpoint (and their count for `herald_fcm_connections`).
        let pool: HTTPClientPool
        /// `app.maxRate` as a token bucket, consulted before each send.
        var rate: TokenBucket?
        var inFlight = 0
        /// Claimed requests waiting for a slot, oldest first.
        private var queued = PendingQueue<PreparedRequest>()
        var claiming = false
        var mayHaveReady = true
        var paused = false
        var gateUntil: Int64 = 0
        var wakeAt: Int64?
        var consecutiveFailures = 0
        /// Quota gates closed in a row, for their backoff; a 2xx resets it.
        var quotaGates = 0
        /// The HTTP version FCM last answered over, to log when it shows or changes.
        var httpVersion: String?
        /// The provider is getting ready (v1: fetching an access token); nothing is claimed or sent meanwhile.
        var preparing = false
        /// The provider asked not to be prepared again before this time.
        var notReadyUntil: Int64 = 0
        /// `herald_fcm_requests_total` of this app per answer code, resolved once per code.
        var requestSeries: [String: Metrics.Series] = [:]

        init(app: App) {
            self.app = app
            let connections = app.provider.maxConnections(concurrency: app.concurrency)
            pool = HTTPClientPool(maxConnectionsPerHost: connections, name: "send-\(app.name)")
            rate = app.maxRate.map { TokenBucket(ratePerSecond: $0) }
        }

        /// Claim more while fewer than this many claimed requests wait: two concurrencies' worth, so that one
        /// window's worth is still there to send while the next claim waits its turn at the writer behind the
        /// outcomes being applied (with one, the window ran dry during every claim: stop-and-wait); with a rate
        /// limit no more than ~10 s of sending, so claimed rows don't sit on their leases behind the bucket.
        var claimBelow: Int {
            guard let rate = app.maxRate else { return 2 * app.concurrency }
            return max(1, min(2 * app.concurrency, Int(rate * 10)))
        }

        var pendingCount: Int { queued.count }

        func addPending(_ requests: [PreparedRequest]) {
            queued.append(contentsOf: requests)
        }

        /// The oldest waiting request.
        func nextPending() -> PreparedRequest? {
            queued.popFirst()
        }

        /// Takes every waiting request's deliveries back, as releases.
        func releasePending() -> [DeliveryUpdate] {
            queued.removeAll().flatMap { $0.deliveries.map { DeliveryUpdate.release(id: $0.id) } }
        }
    }

    private let queue = DispatchQueue(label: "herald-delivery")
    private let writer: any StoreWriter
    private let metrics: Metrics
    private let requestSeconds: Metrics.Series
    private let options: Options
    private let runtimes: [String: Runtime]
    private var random = SystemRandomNumberGenerator()
    private var stopping = false
    private var ticks = 0
    /// Outcomes waiting for the next flush, per app: every answer handled in one turn of `queue` shares one
    /// writer job instead of each paying for its own.
    private var outbox: [String: Outbox] = [:]
    private var flushScheduled = false
    /// Deliveries this process has leased and not yet handed an outcome to the writer: waiting for a slot or in
    /// flight. Their leases are renewed; nothing else's is.
    private var held = Set<Int64>()
    /// Answers from the pools waiting for `handleAnswers` on `queue`.
    private let answers = Mutex<[Answer]>([])

    private struct Outbox {
        var updates: [DeliveryUpdate] = []
        var pauseReason: String?
        var gateUntil: Int64?

        mutating func add(_ more: [DeliveryUpdate], plan: OutcomePlan?) {
            updates += more
            if let reason = plan?.pauseReason { pauseReason = pauseReason ?? reason }
            if let until = plan?.gateUntil { gateUntil = max(gateUntil ?? 0, until) }
        }
    }
    /// Identifies this process's leases.
    public let owner: String

    public init(writer: any StoreWriter, apps: [App], metrics: Metrics = .herald(), options: Options = Options()) {
        self.writer = writer
        self.metrics = metrics
        requestSeconds = metrics.series("herald_fcm_request_seconds")
        self.options = options
        self.owner = "herald-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        self.runtimes = Dictionary(uniqueKeysWithValues: apps.map { ($0.name, Runtime(app: $0)) })
    }

    /// Registers the apps and starts delivering. On a queue of its own (`Options.sharedQueue` false: `serve` holds
    /// a lock on the SQLite file) every lease not this process's was left by a previous run and is released at
    /// once; on a shared queue they may be another instance's, and only the rescuer takes back those nobody renews.
    public func start() throws {
        let names = Array(runtimes.keys)
        let (owner, shared) = (self.owner, options.sharedQueue)
        let released = try writer.write { connection -> Int in
            for name in names { try connection.ensureApp(name) }
            return shared ? 0 : try connection.releaseForeignLeases(owner: owner, now: Clock.nowMillis())
        }
        if released > 0 { Log.info("released leases of a previous run", ["deliveries": .int(Int64(released))]) }
        for runtime in runtimes.values.sorted(by: { $0.app.name < $1.app.name }) {
            Log.info("sending", [
                "app": .string(runtime.app.name), "concurrency": .int(Int64(runtime.app.concurrency)),
                "max_connections": .int(Int64(runtime.app.provider.maxConnections(concurrency: runtime.app.concurrency))),
                "max_rate": runtime.app.maxRate.map { .double($0) } ?? .string("unlimited"),
            ])
        }
        queue.async { self.tick() }
    }

    /// New deliveries were committed: claim now rather than at the next timer.
    public func wake() {
        queue.async {
            for runtime in self.runtimes.values {
                runtime.mayHaveReady = true
                self.pump(runtime)
            }
        }
    }

    /// Stops claiming, releases what was claimed but not sent, waits up to `gracePeriod` seconds for requests in
    /// flight (the rest are cancelled and released without charging an attempt), and waits for every outcome to
    /// be written.
    public func stop(gracePeriod: Double) {
        let unsent = queue.sync { () -> [DeliveryUpdate] in
            stopping = true
            var releases: [DeliveryUpdate] = []
            for runtime in runtimes.values {
                releases += runtime.releasePending()
            }
            return releases
        }
        let owner = self.owner
        if !unsent.isEmpty {
            _ = try? writer.write { try $0.apply(unsent, owner: owner, now: Clock.nowMillis()) }
        }
        // Every app's pool drains at once, so N apps take one grace period, not N.
        let pools = runtimes.values.map(\.pool)
        DispatchQueue.concurrentPerform(iterations: pools.count) { pools[$0].shutdown(gracePeriod: gracePeriod) }
        queue.sync {}  // completions posted by the pool have been planned
        queue.sync { flush() }  // and handed to the writer
        _ = try? writer.write { _ in }  // and the writer, first in first out, has committed them
    }

    // MARK: - Scheduling (on `queue`)

    private func pump(_ runtime: Runtime) {
        guard !stopping, !runtime.paused else { return }
        let now = Clock.nowMillis()
        if runtime.gateUntil > now {
            schedule(runtime, at: runtime.gateUntil)
            return
        }
        if runtime.app.provider.needsPreparation(now: now) {
            prepare(runtime, now: now)
            return
        }
        while runtime.inFlight < runtime.app.concurrency, runtime.pendingCount > 0 {
            if runtime.rate != nil, !runtime.rate!.take(now: now) {
                schedule(runtime, at: runtime.rate!.nextTokenAt(now: now))
                break
            }
            guard let request = runtime.nextPending() else { break }
            // Its TTL (or TTL 0's window) ran out while it waited for a slot: never sent late.
            if request.message.expiresAt <= now {
                write(request.deliveries.map { .expired(id: $0.id) }, plan: nil, on: runtime)
                continue
            }
            send(request, on: runtime)
        }
        if !runtime.claiming, runtime.mayHaveReady, runtime.pendingCount < runtime.claimBelow {
            claim(runtime)
        }
    }

    /// The provider cannot send yet (v1: no usable access token). Requests built with the credentials it held go back
    /// to the queue uncharged, and it gets ready off this queue; `prepared` picks up from there.
    private func prepare(_ runtime: Runtime, now: Int64) {
        if runtime.pendingCount > 0 {
            runtime.mayHaveReady = true
            write(runtime.releasePending(), plan: nil, on: runtime)
        }
        guard runtime.mayHaveReady, !runtime.preparing else { return }
        if runtime.notReadyUntil > now {
            schedule(runtime, at: runtime.notReadyUntil)
            return
        }
        runtime.preparing = true
        runtime.app.provider.prepare(now: now) { readiness in
            self.queue.async { self.prepared(readiness, on: runtime) }
        }
    }

    private func prepared(_ readiness: ProviderReadiness, on runtime: Runtime) {
        runtime.preparing = false
        guard !stopping else { return }
        switch readiness {
        case .ready:
            runtime.notReadyUntil = 0
            pump(runtime)
        case .retry(let at):
            runtime.notReadyUntil = at
            schedule(runtime, at: at)
        case .pause(let reason):
            if !runtime.paused {
                runtime.paused = true
                Log.warn("app paused: credentials refused", [
                    "app": .string(runtime.app.name), "reason": .string(reason),
                ])
            }
            write([], plan: OutcomePlan(pauseReason: reason), on: runtime)
        }
    }

    private func claim(_ runtime: Runtime) {
        runtime.claiming = true
        // Claim up to `claimBelow` waiting requests: rows then wait for a slot about two rounds of answers at most
        // (and their leases are renewed while they do).
        let slots = max(1, runtime.claimBelow - runtime.pendingCount)
        let perRequest = runtime.app.provider.maxTargetsPerRequest
        let limit = min(options.claimLimit, slots.multipliedReportingOverflow(by: perRequest).partialValue)
        let (app, owner, lease) = (runtime.app.name, self.owner, options.leaseMillis)
        // A claim need not reach the disk: lost in a power cut, its rows simply stay queued.
        writer.enqueue(durable: false, {
            try $0.claim(app: app, limit: limit, owner: owner, leaseMillis: lease, now: Clock.nowMillis())
        }) { result in
            self.queue.async { self.claimed(result, on: runtime, limit: limit) }
        }
    }

    private func claimed(_ result: Result<ClaimResult, Error>, on runtime: Runtime, limit: Int) {
        runtime.claiming = false
        let claim: ClaimResult
        switch result {
        case .success(let value):
            claim = value
        case .failure(let error):
            Log.warn("claim failed", ["app": .string(runtime.app.name), "error": .string("\(error)")])
            schedule(runtime, at: Clock.nowMillis() + 1_000)
            return
        }
        if let state = claim.app {
            runtime.paused = state.paused
            runtime.gateUntil = max(runtime.gateUntil, state.gateUntil)
        }
        if claim.expired > 0 {
            metrics.increment("herald_deliveries_total", ["app": runtime.app.name, "outcome": "dead"], by: Double(claim.expired))
            Log.warn("dead letters", [
                "app": .string(runtime.app.name), "count": .int(Int64(claim.expired)), "reasons": .string("Expired"),
            ])
        }
        if claim.dropped > 0 {
            metrics.increment("herald_deliveries_total", ["app": runtime.app.name, "outcome": "dropped"], by: Double(claim.dropped))
        }
        runtime.mayHaveReady = claim.deliveries.count + claim.expired + claim.dropped >= limit
        if let due = claim.nextDueAt { schedule(runtime, at: due) }

        held.formUnion(claim.deliveries.lazy.map(\.id))
        if stopping {
            let releases = claim.deliveries.map { DeliveryUpdate.release(id: $0.id) }
            write(releases, plan: nil, on: runtime)
            return
        }
        let now = Clock.nowMillis()
        var order: [String] = []
        var byMessage: [String: [ClaimedDelivery]] = [:]
        for delivery in claim.deliveries {
            if byMessage[delivery.messageID] == nil { order.append(delivery.messageID) }
            byMessage[delivery.messageID, default: []].append(delivery)
        }
        for id in order {
            guard let message = claim.messages[id], let deliveries = byMessage[id] else { continue }
            runtime.addPending(runtime.app.provider.requests(for: message, deliveries: deliveries, now: now))
        }
        pump(runtime)
    }

    private func send(_ request: PreparedRequest, on runtime: Runtime) {
        runtime.inFlight += 1
        runtime.pool.submit(request.outbound) { result, seconds in
            // The pool completes a turn's answers one after another on its thread: the first of them schedules
            // one job on the queue that handles every answer gathered by then, instead of a job per answer.
            let first = self.answers.withLock { answers in
                answers.append(Answer(request: request, result: result, seconds: seconds, runtime: runtime))
                return answers.count == 1
            }
            if first { self.queue.async { self.handleAnswers() } }
        }
    }

    private struct Answer: @unchecked Sendable {
        var request: PreparedRequest
        var result: TransportResult
        var seconds: Double
        var runtime: Runtime
    }

    private func handleAnswers() {
        let batch = answers.withLock { answers in
            defer { answers.removeAll(keepingCapacity: true) }
            return answers
        }
        for answer in batch {
            completed(answer.request, result: answer.result, seconds: answer.seconds, on: answer.runtime)
        }
    }

    private func completed(_ request: PreparedRequest, result: TransportResult, seconds: Double, on runtime: Runtime) {
        runtime.inFlight -= 1
        let now = Clock.nowMillis()
        if case .failure("cancelled") = result {
            write(request.deliveries.map { .release(id: $0.id) }, plan: nil, on: runtime)
            return
        }
        let classification = runtime.app.provider.classify(result, of: request, now: now)
        let status: Int? = if case .response(let status, _, _, _) = result { status } else { nil }
        let code = switch result {
        case .response(let status, _, _, _): String(status)
        case .failure(let reason): reason
        }
        let series = runtime.requestSeries[code] ?? {
            let series = metrics.series("herald_fcm_requests_total", ["app": runtime.app.name, "code": code])
            runtime.requestSeries[code] = series
            return series
        }()
        metrics.increment(series)
        metrics.observe(requestSeconds, seconds: seconds)
        if case .response(_, _, _, let version) = result, version != runtime.httpVersion {
            runtime.httpVersion = version
            Log.info("fcm answers", [
                "app": .string(runtime.app.name), "http_version": .string(version),
                "connections": .int(Int64(runtime.pool.connections)),
            ])
        }
        // A quota error without Retry-After: FCM asks for a minute at least, and every other request would meet
        // the same quota meanwhile. Answers to requests sent before the gate closed don't count again.
        let quota = classification.closesGate && classification.retryAfterUntil == nil
            && classification.outcomes.contains { if case .retrySlow = $0 { true } else { false } }
        if quota && runtime.gateUntil <= now { runtime.quotaGates += 1 }
        if status.map({ (200..<300).contains($0) }) ?? false { runtime.quotaGates = 0 }
        let fallback = quota
            ? min(options.quotaGateCapMillis, options.quotaGateBaseMillis << Int64(min(max(0, runtime.quotaGates - 1), 20)))
            : min(options.gateCapMillis, options.gateBaseMillis << Int64(min(runtime.consecutiveFailures, 20)))
        let plan = OutcomePlanner.plan(
            classification, for: request, status: status, policy: options.policy, fallbackGateMillis: fallback,
            now: now, using: &random)
        Log.debug("fcm answered", [
            "app": .string(runtime.app.name), "status": .int(Int64(status ?? 0)),
            "deliveries": .int(Int64(request.deliveries.count)), "seconds": .double(seconds),
        ])

        var updates = plan.updates
        if classification.outcomes.contains(where: { if case .requeue = $0 { true } else { false } }) {
            // Released for the provider to renew its credentials: ready again at once.
            runtime.mayHaveReady = true
        }
        if let reason = plan.pauseReason, !runtime.paused {
            runtime.paused = true
            Log.warn("app paused: FCM refused the sender", ["app": .string(runtime.app.name), "reason": .string(reason)])
        }
        if let until = plan.gateUntil {
            runtime.consecutiveFailures += 1
            if until > runtime.gateUntil {
                runtime.gateUntil = until
                Log.warn("app gate closed", [
                    "app": .string(runtime.app.name), "until_ms": .int(until), "status": .int(Int64(status ?? 0)),
                ])
            }
        } else if status.map({ $0 < 500 }) ?? false {
            runtime.consecutiveFailures = 0
        }
        if runtime.paused || runtime.gateUntil > now {
            // Claimed but unsent rows go back to the queue: they must not wait on a lease through a long gate.
            updates += runtime.releasePending()
        }
        write(updates, plan: plan, on: runtime)
        pump(runtime)
    }

    /// Queues updates (and the app switches of `plan`) for the next flush, which commits every app's outbox in one
    /// writer job.
    private func write(_ updates: [DeliveryUpdate], plan: OutcomePlan?, on runtime: Runtime) {
        var earliestRetry: Int64?
        for update in updates {
            held.remove(update.id)
            if case .retry(_, let at, _, _) = update { earliestRetry = min(earliestRetry ?? at, at) }
        }
        // In place: a copy of the app's box taken out and put back would copy its growing list of updates for
        // every answer of the turn.
        outbox[runtime.app.name, default: Outbox()].add(updates, plan: plan)
        if !flushScheduled {
            flushScheduled = true
            queue.async { self.flush() }
        }
        if let earliestRetry { schedule(runtime, at: earliestRetry) }
    }

    private func flush() {
        flushScheduled = false
        guard !outbox.isEmpty else { return }
        let boxes = outbox
        outbox = [:]
        for box in boxes.values { held.subtract(box.updates.lazy.map(\.id)) }
        let (owner, metrics) = (self.owner, self.metrics)
        writer.enqueue({ connection -> [String: AppliedOutcomes] in
            let now = Clock.nowMillis()
            var applied: [String: AppliedOutcomes] = [:]
            for (app, box) in boxes {
                applied[app] = try connection.apply(box.updates, owner: owner, now: now)
                if let reason = box.pauseReason { try connection.pauseApp(app, reason: reason, now: now) }
                if let until = box.gateUntil { try connection.closeGate(app, until: until) }
            }
            return applied
        }) { result in
            switch result {
            case .success(let applied):
                for (app, outcomes) in applied {
                    Self.count(boxes[app]?.updates ?? [], applied: outcomes, app: app, into: metrics)
                }
            case .failure(let error as any StoreError) where error.isTransient:
                // The database is away (connection lost, disk full): these answers are still true and the rows
                // still leased to this process, so write them again rather than let the rescuer send them twice.
                Log.warn("writing outcomes failed; trying again", [
                    "apps": .string(boxes.keys.sorted().joined(separator: ",")), "error": .string("\(error)"),
                ])
                self.queue.asyncAfter(deadline: .now() + .seconds(1)) { self.rewrite(boxes) }
            case .failure(let error):
                // The leases stay; the rescuer hands the rows out again when they expire.
                Log.error("writing outcomes failed", [
                    "apps": .string(boxes.keys.sorted().joined(separator: ",")), "error": .string("\(error)"),
                ])
            }
        }
    }

    /// Puts outcomes whose write failed back in front of the outbox, and their rows back among those whose leases
    /// are renewed until they are written.
    private func rewrite(_ boxes: [String: Outbox]) {
        for (app, failed) in boxes {
            var box = outbox[app] ?? Outbox()
            box.updates = failed.updates + box.updates
            box.pauseReason = box.pauseReason ?? failed.pauseReason
            if let until = failed.gateUntil { box.gateUntil = max(box.gateUntil ?? 0, until) }
            outbox[app] = box
            held.formUnion(failed.updates.lazy.map(\.id))
        }
        if !flushScheduled {
            flushScheduled = true
            flush()
        }
    }

    /// Metrics and the dead-letter log line for a committed batch of outcomes.
    private static func count(_ updates: [DeliveryUpdate], applied: AppliedOutcomes, app: String, into metrics: Metrics) {
        let written = Set(applied.updated)
        var outcomes: [String: Int] = [:]
        var deadReasons: [String: Int] = [:]
        for update in updates where written.contains(update.id) {
            switch update {
            case .delivered: outcomes["delivered", default: 0] += 1
            case .retry: outcomes["retry", default: 0] += 1
            case .dropped: outcomes["dropped", default: 0] += 1
            case .release: outcomes["released", default: 0] += 1
            case .dead(_, let reason, _), .deadMessage(_, let reason, _):
                outcomes["dead", default: 0] += 1
                deadReasons[reason.rawValue, default: 0] += 1
            case .expired:
                outcomes["dead", default: 0] += 1
                deadReasons["Expired", default: 0] += 1
            }
        }
        for (outcome, count) in outcomes {
            metrics.increment("herald_deliveries_total", ["app": app, "outcome": outcome], by: Double(count))
        }
        if applied.tokensDeleted > 0 {
            metrics.increment("herald_tokens_deleted_total", ["app": app], by: Double(applied.tokensDeleted))
        }
        if applied.tokensReplaced > 0 {
            metrics.increment("herald_tokens_replaced_total", ["app": app], by: Double(applied.tokensReplaced))
        }
        if applied.deadLetters > 0 {
            let reasons = deadReasons.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            Log.warn("dead letters", [
                "app": .string(app), "count": .int(Int64(applied.deadLetters)), "reasons": .string(reasons),
            ])
        }
    }

    /// Makes sure the app is looked at again at `at` (keeps only the earliest pending wake-up).
    private func schedule(_ runtime: Runtime, at: Int64) {
        if let existing = runtime.wakeAt, existing <= at { return }
        runtime.wakeAt = at
        let delay = max(0, at - Clock.nowMillis())
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(delay))) {
            guard runtime.wakeAt == at else { return }
            runtime.wakeAt = nil
            runtime.mayHaveReady = true
            self.pump(runtime)
        }
    }

    /// Once a tick: pick up changes made outside this process (pause/resume, requeues) and rescue expired leases.
    private func tick() {
        guard !stopping else { return }
        ticks += 1
        let names = Array(runtimes.keys)
        // Read through the writer, not a reader: it runs after every outcome already queued, so a pause or gate
        // this process decided is never undone by a read that predates its commit.
        writer.enqueue({ connection in
            try connection.apps().filter { names.contains($0.name) }.map { state in
                (state, try connection.nextDue(app: state.name))
            }
        }) { result in
            self.queue.async {
                if case .success(let states) = result {
                    let now = Clock.nowMillis()
                    for (state, due) in states {
                        guard let runtime = self.runtimes[state.name] else { continue }
                        if runtime.paused && !state.paused {
                            Log.info("app resumed", ["app": .string(state.name)])
                            runtime.gateUntil = state.gateUntil
                        } else if !runtime.paused && state.paused {
                            Log.warn("app paused", [
                                "app": .string(state.name), "reason": .string(state.pauseReason ?? ""),
                            ])
                        }
                        runtime.paused = state.paused
                        runtime.gateUntil = max(runtime.gateUntil, state.gateUntil)
                        self.metrics.set(
                            "herald_fcm_connections", ["app": state.name], to: Double(runtime.pool.connections))
                        if let due, due <= now { runtime.mayHaveReady = true }
                        self.pump(runtime)
                    }
                }
                self.queue.asyncAfter(deadline: .now() + .milliseconds(self.options.tickMillis)) { self.tick() }
            }
        }
        if ticks % max(1, Int(options.leaseMillis / 4) / options.tickMillis) == 0 {
            // Renewed first, in the same job: the rescuer never takes back a row this process still holds.
            let (ids, owner, lease) = (Array(held), self.owner, options.leaseMillis)
            writer.enqueue(durable: false, { connection -> Int in
                let now = Clock.nowMillis()
                try connection.renewLeases(ids, owner: owner, until: now + lease)
                return try connection.rescueExpiredLeases(now: now)
            }) { result in
                switch result {
                case .success(let rescued) where rescued > 0:
                    Log.warn("rescued expired leases", ["deliveries": .int(Int64(rescued))])
                    self.wake()
                case .failure(let error):
                    Log.warn("renewing leases failed", ["error": .string("\(error)")])
                default:
                    break
                }
            }
        }
    }
}
