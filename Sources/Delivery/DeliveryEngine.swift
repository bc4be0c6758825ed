import Classify
import Dispatch
import Foundation
import Send
import Queue
import Support
import Synchronization

/// Claims ready deliveries, sends them through each app's provider, and writes back what FCM answered.
///
/// When to claim, send, hold back, gate or pause is each app's `AppScheduler` (a state machine without I/O); the
/// engine feeds it events and carries out the actions it returns: database work through the writer, rendering a
/// claim's requests on the render stage (`RenderStage`, on every core: Web Push encrypts each request), requests
/// through the app's client pool, timers on the queue. All of it is driven from one serial dispatch queue, so nothing
/// here blocks. What the apps share is two more machines of the same kind, whose actions the engine carries out
/// too: the `Outbox`, which decides when the outcomes gathered are written, and the `LeaseKeeper`, which holds the
/// leases, renews them and decides when the rescuer runs. Ingest wakes the engine after each commit; otherwise an
/// app sleeps until the earliest `next_attempt_at` or gate it knows of, with a one-second look at the `apps` table
/// so a `herald resume` or a requeue from the CLI is seen within a second.
public final class DeliveryEngine: @unchecked Sendable {
    public struct App: Sendable {
        public var name: String
        public var provider: any Provider
        public var concurrency: Int
        /// Sends per second at most (a token bucket), to stay under a known FCM quota instead of collecting 429s;
        /// nil: as fast as `concurrency` allows.
        public var maxRate: Double?
        /// Of `concurrency`, how many requests may be in flight to one push-service origin at most (Web Push's
        /// `origin_concurrency`, SPEC §19): a slow origin holds its share, and the rest keep flowing.
        public var originConcurrency: Int

        public init(
            name: String, provider: any Provider, concurrency: Int, maxRate: Double? = nil,
            originConcurrency: Int = 100
        ) {
            self.name = name
            self.provider = provider
            self.concurrency = concurrency
            self.maxRate = maxRate
            self.originConcurrency = originConcurrency
        }
    }

    public struct Options: Sendable {
        /// Rows leased per claim (one multicast request's worth; a multicast app's claim takes up to
        /// `AppScheduler.requestsPerClaim` requests' worth).
        public var claimLimit = 1000
        /// How long a lease lasts unless renewed; the rescuer hands out again only rows whose lease nobody renewed.
        /// Held leases are renewed, and expired ones rescued, four times per lease.
        public var leaseMillis: Int64 = 120_000
        public var policy = RetryPolicy()
        /// Gate after a 5xx or transport failure without Retry-After: 1 s, doubling per fault in a row, capped. A
        /// fault is one however many requests it fails: those in flight together when it struck count once.
        public var gateBaseMillis: Int64 = 1_000
        public var gateCapMillis: Int64 = 60_000
        /// Gate after a quota error (429 `QUOTA_EXCEEDED`) without Retry-After: 1 minute, as FCM asks, doubling per
        /// quota fault in a row, capped.
        public var quotaGateBaseMillis: Int64 = 60_000
        public var quotaGateCapMillis: Int64 = 960_000
        /// A push-service origin that refuses the sender (401, 403) for this many different subscriptions in a row,
        /// with no push accepted between, is paused until the app is resumed.
        public var originPauseRefusals = 5
        /// How long the claimed rows of a paused origin are put back for before they are looked at again.
        public var pausedOriginRecheckMillis: Int64 = 60_000
        /// How often the `apps` table and due rows are looked at.
        public var tickMillis = 1_000
        /// Other instances deliver from the same database (PostgreSQL): leases not this process's are left alone.
        public var sharedQueue = false
        /// When a quiet HTTP/2 connection gets a PING, and how long its ACK may take.
        public var liveness = HTTP2Liveness.standard
        /// How long the requests in flight of an app replaced or removed at run time may take to be answered
        /// (seconds); then they are cancelled and their rows released.
        public var retiredGracePeriod = 30.0

        public init() {}
    }

    /// One app: its scheduler and what carries out its actions. Only touched on `queue` (hence unchecked).
    private final class Runtime: @unchecked Sendable {
        var scheduler: AppScheduler
        /// This app's own connections to its endpoint (and their count for `herald_fcm_connections`).
        let pool: any RequestTransport
        /// `herald_fcm_requests_total` of this app per answer code, resolved once per code.
        var requestSeries: [String: Metrics.Series] = [:]
        /// The HTTP version FCM last answered over, to log when it shows or changes.
        var httpVersion: String?
        /// Requests that timed out: they may have reached the provider, and are sent again as connection losses are.
        var requestsTimedOut = 0
        /// Requests sent during this turn of `queue`, handed to the pool together at its end.
        var outgoing: [RequestTransport.Submission] = []

        var app: App { scheduler.app }

        init(app: App, options: Options) {
            scheduler = AppScheduler(app: app, options: options)
            pool = app.provider.makeTransport(
                concurrency: app.concurrency, name: "send-\(app.name)", liveness: options.liveness)
        }
    }

    private let queue = DispatchQueue(label: "herald-delivery")
    private let writer: any StoreWriter
    private let metrics: Metrics
    private let requestSeconds: Metrics.Series
    private let options: Options
    /// The apps sending, by name. Only touched on `queue` once started.
    private var runtimes: [String: Runtime]
    /// Apps replaced or removed at run time whose requests are still in flight: their answers are applied as any
    /// other's, and their pools close once drained. Only touched on `queue`.
    private var retired: [ObjectIdentifier: Runtime] = [:]
    private var random = SystemRandomNumberGenerator()
    private var stopping = false
    /// When the outcomes gathered are written (every answer of a turn of `queue` in one writer job). Only touched
    /// on `queue`.
    private var outbox = Outbox()
    /// The leases this process holds, their renewal and the rescuer's timing. Only touched on `queue`.
    private var leases: LeaseKeeper
    /// Answers from the pools waiting for `handleAnswers` on `queue`.
    private let answers = Mutex<[Answer]>([])
    /// Identifies this process's leases.
    public let owner: String

    public init(writer: any StoreWriter, apps: [App], metrics: Metrics = .herald(), options: Options = Options()) {
        self.writer = writer
        self.metrics = metrics
        requestSeconds = metrics.series("herald_fcm_request_seconds")
        self.options = options
        self.owner = "herald-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        self.runtimes = Dictionary(uniqueKeysWithValues: apps.map { ($0.name, Runtime(app: $0, options: options)) })
        leases = LeaseKeeper(leaseMillis: options.leaseMillis, tickMillis: options.tickMillis)
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
        for runtime in runtimes.values.sorted(by: { $0.app.name < $1.app.name }) { Self.logSending(runtime.app) }
        queue.async { self.tick() }
    }

    private static func logSending(_ app: App) {
        Log.info("sending", [
            "app": .string(app.name), "concurrency": .int(Int64(app.concurrency)),
            "max_connections": .int(Int64(app.provider.maxConnections(concurrency: app.concurrency))),
            "max_rate": app.maxRate.map { .double($0) } ?? .string("unlimited"),
        ])
    }

    // MARK: - Apps changed at run time (SPEC §22)

    /// Adds `app`, or replaces the app of that name: new claims go through the new provider (its credentials, its
    /// connections) at once, while requests the old one rendered finish with the credentials they were rendered
    /// with, on its connections, which then close. Returns once the engine runs the new app. Call off `queue`.
    public func put(_ app: App) {
        queue.sync {
            guard !stopping else { return }
            let runtime = Runtime(app: app, options: options)
            if let old = runtimes.updateValue(runtime, forKey: app.name) { retire(old) }
            Self.logSending(app)
            perform(runtime.scheduler.rowsCommitted(now: Clock.nowMillis()), on: runtime)
        }
    }

    /// Stops sending for app `name`: nothing more is claimed for it, rows claimed and not sent go back to the queue,
    /// requests in flight finish. Its queued deliveries stay queued. Call off `queue`.
    public func remove(_ name: String) {
        queue.sync {
            guard let old = runtimes.removeValue(forKey: name) else { return }
            retire(old)
            Log.info("stopped sending", ["app": .string(name)])
        }
    }

    /// `runtime` claims no more; what it claimed and did not send is released, its requests in flight are
    /// answered (for up to `Options.retiredGracePeriod`, then cancelled and released), then its pool closes.
    private func retire(_ runtime: Runtime) {
        let unsent = runtime.scheduler.stop()
        if !unsent.isEmpty { write(unsent, plan: nil, app: runtime.app.name) }
        let key = ObjectIdentifier(runtime)
        retired[key] = runtime
        let grace = options.retiredGracePeriod
        DispatchQueue.global().async {
            runtime.pool.shutdown(gracePeriod: grace)
            self.queue.async { self.retired[key] = nil }
        }
    }

    /// New deliveries were committed: claim now rather than at the next timer.
    public func wake() {
        queue.async {
            let now = Clock.nowMillis()
            for runtime in self.runtimes.values { self.perform(runtime.scheduler.rowsCommitted(now: now), on: runtime) }
        }
    }

    /// Stops claiming, releases what was claimed but not sent, waits up to `gracePeriod` seconds for requests in
    /// flight (the rest are cancelled and released without charging an attempt), and waits for every outcome to
    /// be written.
    public func stop(gracePeriod: Double) {
        let (unsent, pools) = queue.sync { () -> ([DeliveryUpdate], [any RequestTransport]) in
            stopping = true
            return (runtimes.values.flatMap { $0.scheduler.stop() }, runtimes.values.map(\.pool))
        }
        let owner = self.owner
        if !unsent.isEmpty {
            _ = try? writer.write { try $0.apply(unsent, owner: owner, now: Clock.nowMillis()) }
        }
        // Every app's pool drains at once, so N apps take one grace period, not N.
        DispatchQueue.concurrentPerform(iterations: pools.count) { pools[$0].shutdown(gracePeriod: gracePeriod) }
        queue.sync {}  // completions posted by the pool have been planned
        queue.sync { perform(outbox.flush(now: Self.monotonicNow())) }  // and handed to the writer
        _ = try? writer.write { _ in }  // and the writer, first in first out, has committed them
    }

    /// The app's pool's connection counts as metrics: counters the pool keeps for its whole life, copied. Requests
    /// possibly received twice are those lost with their connection and those that timed out (SPEC §11).
    private func record(_ runtime: Runtime) {
        let app = runtime.app.name
        let statistics = runtime.pool.statistics
        metrics.set("herald_connections_opened_total", ["app": app], to: Double(statistics.opened))
        for (cause, count) in statistics.closed where count > 0 {
            metrics.set("herald_connections_closed_total", ["app": app, "cause": cause], to: Double(count))
        }
        metrics.set("herald_pings_total", ["app": app], to: Double(statistics.pings))
        metrics.set(
            "herald_requests_retried_after_connection_loss_total", ["app": app],
            to: Double(statistics.requestsLost + runtime.requestsTimedOut))
    }

    // MARK: - Carrying out the schedulers' actions (on `queue`)

    private func perform(_ actions: [AppScheduler.Action], on runtime: Runtime) {
        for action in actions {
            switch action {
            case .claim(let limit): claim(runtime, limit: limit)
            case .render(let runs): render(runs, on: runtime)
            case .send(let request): send(request, on: runtime)
            case .write(let updates, var plan):
                // A replaced app's old credentials are no longer the app's: their refusal pauses nothing (the rows
                // go back to the queue, for the new ones).
                if retired[ObjectIdentifier(runtime)] != nil { plan?.pauseReason = nil }
                write(updates, plan: plan, app: runtime.app.name)
            case .prepare:
                let prepared: @Sendable (ProviderReadiness) -> Void = { readiness in
                    self.queue.async {
                        self.perform(runtime.scheduler.prepared(readiness, now: Clock.nowMillis()), on: runtime)
                    }
                }
                guard let credentials = runtime.app.provider.credentials else {
                    prepared(.ready)
                    continue
                }
                credentials.obtain(now: Clock.nowMillis(), completion: prepared)
            case .renewCredentials:
                runtime.app.provider.credentials?.renew(now: Clock.nowMillis())
            case .credentialRefused(let request, let result):
                let refusal = runtime.app.provider.credentials?.refused(request) ?? .stale
                perform(
                    runtime.scheduler.refusalJudged(
                        refusal, request: request, result: result, now: Clock.nowMillis(), using: &random),
                    on: runtime)
            case .credentialRenewedTooOften:
                runtime.app.provider.credentials?.renewedTooOften(now: Clock.nowMillis())
            case .credentialAccepted(let request):
                if runtime.app.provider.credentials?.accepted(request) == false {
                    runtime.scheduler.credentialProven()
                }
            case .wake(let at):
                let delay = max(0, at - Clock.nowMillis())
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(delay))) {
                    self.perform(runtime.scheduler.timerFired(at: at, now: Clock.nowMillis()), on: runtime)
                }
            case .note(let note): log(note, app: runtime.app.name)
            }
        }
    }

    private func log(_ note: AppScheduler.Note, app: String) {
        switch note {
        case .pausedForCredentials(let reason):
            Log.warn("app paused: credentials refused", ["app": .string(app), "reason": .string(reason)])
        case .renewingRefusedCredential:
            Log.warn("fcm v1 refused the access token: fetching a new one", ["app": .string(app)])
        case .pausedByFCM(let reason):
            Log.warn("app paused: FCM refused the sender", ["app": .string(app), "reason": .string(reason)])
        case .pausedOutside(let reason):
            Log.warn("app paused", ["app": .string(app), "reason": .string(reason)])
        case .resumed:
            Log.info("app resumed", ["app": .string(app)])
        case .gateClosed(let until, let status, let reason):
            Log.warn("app gate closed", [
                "app": .string(app), "until_ms": .int(until), "status": .int(Int64(status ?? 0)),
                "reason": .string(reason.rawValue),
            ])
        case .originGateClosed(let origin, let until, let status, let reason):
            Log.info("origin gate closed", [
                "app": .string(app), "origin": .string(origin), "until_ms": .int(until),
                "status": .int(Int64(status ?? 0)), "reason": .string(reason.rawValue),
            ])
        case .originPaused(let origin, let reason):
            Log.warn("origin paused: it refused the sender", [
                "app": .string(app), "origin": .string(origin), "reason": .string(reason),
            ])
        case .originResumed(let origin):
            Log.info("origin resumed", ["app": .string(app), "origin": .string(origin)])
        }
    }

    private func claim(_ runtime: Runtime, limit: Int) {
        let (app, owner, lease) = (runtime.app.name, self.owner, options.leaseMillis)
        // A claim need not reach the disk: lost in a power cut, its rows simply stay queued. It may drop or expire
        // rows: outcomes.
        writer.enqueue(durable: false, writesOutcomes: true, {
            try $0.claim(app: app, limit: limit, owner: owner, leaseMillis: lease, now: Clock.nowMillis())
        }) { result in
            self.queue.async { self.claimed(result, on: runtime) }
        }
    }

    private func claimed(_ result: Result<ClaimResult, Error>, on runtime: Runtime) {
        let app = runtime.app.name
        switch result {
        case .success(let claim):
            if claim.expired > 0 {
                metrics.increment("herald_deliveries_total", ["app": app, "outcome": "dead"], by: Double(claim.expired))
                Log.warn("dead letters", [
                    "app": .string(app), "count": .int(Int64(claim.expired)), "reasons": .string("Expired"),
                ])
            }
            if claim.dropped > 0 {
                metrics.increment(
                    "herald_deliveries_total", ["app": app, "outcome": "dropped"], by: Double(claim.dropped))
            }
            leases.claimed(claim.deliveries.lazy.map(\.id))
            perform(runtime.scheduler.claimed(claim, now: Clock.nowMillis()), on: runtime)
        case .failure(let error):
            Log.warn("claim failed", ["app": .string(app), "error": .string("\(error)")])
            leases.writeFailed(now: Clock.nowMillis())
            perform(runtime.scheduler.claimFailed(now: Clock.nowMillis()), on: runtime)
        }
    }

    /// Makes a claim's requests off `queue`, on every core, and hands them back to the app's scheduler on it.
    private func render(_ runs: [ClaimedRun], on runtime: Runtime) {
        let provider = runtime.app.provider
        DispatchQueue.global().async {
            let rendering = RenderStage.render(
                runs, with: provider, now: Clock.nowMillis(), cores: ProcessInfo.processInfo.activeProcessorCount)
            self.queue.async { self.perform(runtime.scheduler.rendered(rendering, now: Clock.nowMillis()), on: runtime) }
        }
    }

    /// Queues `request` for the pool at the end of this turn of `queue`, with the turn's other requests: the pool's
    /// thread is woken once for them all, not once per request (each wake-up a syscall and a context switch).
    private func send(_ request: PreparedRequest, on runtime: Runtime) {
        if runtime.outgoing.isEmpty { queue.async { self.submitOutgoing(of: runtime) } }
        runtime.outgoing.append((request.outbound, { result, seconds in
            // The pool completes a turn's answers one after another on its thread: the first of them schedules
            // one job on the queue that handles every answer gathered by then, instead of a job per answer.
            let first = self.answers.withLock { answers in
                answers.append(Answer(request: request, result: result, seconds: seconds, runtime: runtime))
                return answers.count == 1
            }
            if first { self.queue.async { self.handleAnswers() } }
        }))
    }

    private func submitOutgoing(of runtime: Runtime) {
        let requests = runtime.outgoing
        runtime.outgoing.removeAll(keepingCapacity: true)
        runtime.pool.submit(requests)
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
        var tally = RequestTally()
        for answer in batch {
            completed(answer.request, result: answer.result, seconds: answer.seconds, on: answer.runtime, tally: &tally)
        }
        record(tally)
    }

    /// `herald_fcm_requests_total{app,code}` and the request durations of one turn's answers, added to the metrics
    /// at the turn's end: a lock and a few look-ups per turn instead of per answer.
    private struct RequestTally {
        var requests: [Key: Int] = [:]
        var seconds: [Double] = []

        struct Key: Hashable {
            var runtime: ObjectIdentifier
            var code: String
        }

        mutating func add(_ runtime: Runtime, code: String, seconds: Double) {
            requests[Key(runtime: ObjectIdentifier(runtime), code: code), default: 0] += 1
            self.seconds.append(seconds)
        }
    }

    private func record(_ tally: RequestTally) {
        for (key, count) in tally.requests {
            guard let runtime = runtimes.values.first(where: { ObjectIdentifier($0) == key.runtime })
                ?? retired[key.runtime]
            else { continue }
            let series = runtime.requestSeries[key.code] ?? {
                let series = metrics.series("herald_fcm_requests_total", ["app": runtime.app.name, "code": key.code])
                runtime.requestSeries[key.code] = series
                return series
            }()
            metrics.increment(series, by: Double(count))
        }
        metrics.observe(requestSeconds, seconds: tally.seconds)
    }

    private func completed(
        _ request: PreparedRequest, result: TransportResult, seconds: Double, on runtime: Runtime,
        tally: inout RequestTally
    ) {
        if case .response(let status, _, _, let version) = result {
            tally.add(runtime, code: String(status), seconds: seconds)
            if version != runtime.httpVersion {
                runtime.httpVersion = version
                let fields: KeyValuePairs<String, Log.Value> = [
                    "app": .string(runtime.app.name), "http_version": .string(version),
                    "connections": .int(Int64(runtime.pool.connections)),
                ]
                let app = runtime.app
                if version == "1.1", app.provider.maxConnections(concurrency: app.concurrency) < app.concurrency {
                    Log.warn("provider answers over HTTP/1.1: no multiplexing, one connection per request", fields)
                } else {
                    Log.info("provider answers", fields)
                }
            }
            Log.debug("provider answered", [
                "app": .string(runtime.app.name), "status": .int(Int64(status)),
                "deliveries": .int(Int64(request.deliveries.count)), "seconds": .double(seconds),
            ])
        } else if case .failure(let failure) = result, failure != .cancelled {
            tally.add(runtime, code: failure.description, seconds: seconds)
            if failure == .timeout { runtime.requestsTimedOut += 1 }
        }
        let actions = runtime.scheduler.answered(request, result: result, now: Clock.nowMillis(), using: &random)
        perform(actions, on: runtime)
    }

    /// Queues updates (and the app switches of `plan`) for the next outcome write.
    private func write(_ updates: [DeliveryUpdate], plan: OutcomePlan?, app: String) {
        perform(outbox.gathered(updates, plan: plan, app: app))
    }

    // MARK: - Carrying out the outbox's actions (on `queue`)

    private func perform(_ actions: [Outbox.Action]) {
        for action in actions {
            switch action {
            case .write(let outcomes): write(outcomes)
            case .wake(let at):
                let fire: @Sendable () -> Void = { self.perform(self.outbox.timerFired(now: Self.monotonicNow())) }
                if at <= Self.monotonicNow() {
                    queue.async(execute: fire)
                } else {
                    queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: at), execute: fire)
                }
            }
        }
    }

    /// One writer job for every app's outcomes, with their pauses and gates.
    private func write(_ outcomes: [String: AppOutcomes]) {
        let (owner, metrics) = (self.owner, self.metrics)
        writer.enqueue(durable: true, writesOutcomes: true, { connection -> [String: AppliedOutcomes] in
            let now = Clock.nowMillis()
            var applied: [String: AppliedOutcomes] = [:]
            for (app, box) in outcomes {
                applied[app] = try connection.apply(box.updates, owner: owner, now: now)
                if let reason = box.app.pauseReason { _ = try connection.pauseApp(app, reason: reason, now: now) }
                if let gate = box.app.gate {
                    try connection.closeGate(app, until: gate.until, reason: gate.reason, now: now)
                }
                for (origin, switches) in box.origins {
                    if let reason = switches.pauseReason {
                        _ = try connection.pauseOrigin(app, origin: origin, reason: reason, now: now)
                    }
                    if let gate = switches.gate {
                        try connection.closeOriginGate(app, origin: origin, until: gate.until, reason: gate.reason,
                                                       now: now)
                    }
                }
            }
            return applied
        }) { result in
            switch result {
            case .success(let applied):
                for (app, counts) in applied {
                    Self.count(outcomes[app]?.updates ?? [], applied: counts, app: app, into: metrics)
                }
                self.queue.async { self.written(outcomes) }
            case .failure(let error as any StoreError) where error.isTransient:
                // The database is away (connection lost, disk full): these answers are still true and the rows
                // still leased to this process, so the outbox writes them again rather than let the rescuer send
                // them twice.
                Log.warn("writing outcomes failed; trying again", [
                    "apps": .string(outcomes.keys.sorted().joined(separator: ",")), "error": .string("\(error)"),
                ])
                self.queue.async {
                    self.leases.writeFailed(now: Clock.nowMillis())
                    self.perform(self.outbox.writeFailed(outcomes, now: Self.monotonicNow()))
                }
            case .failure(let error):
                // The leases stay, no longer renewed: the rescuer hands the rows out again when they expire.
                Log.error("writing outcomes failed", [
                    "apps": .string(outcomes.keys.sorted().joined(separator: ",")), "error": .string("\(error)"),
                ])
                self.queue.async { self.written(outcomes) }
            }
        }
    }

    /// The write of `outcomes` is over (committed, or failed for good): their leases are no longer this process's
    /// to renew, and what gathered in the outbox meanwhile goes next.
    private func written(_ outcomes: [String: AppOutcomes]) {
        for box in outcomes.values { leases.released(box.updates.lazy.map(\.id)) }
        perform(outbox.written())
    }

    /// The outbox's clock: monotonic, as its pacing is.
    private static func monotonicNow() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds
    }

    /// Metrics and the dead-letter log line for a committed batch of outcomes.
    private static func count(
        _ updates: [DeliveryUpdate], applied: AppliedOutcomes, app: String, into metrics: Metrics
    ) {
        let written = Set(applied.updated)
        // Counted by position, named once at the end: a batch of 1000 delivered rows hashes no name per row.
        let names = ["delivered", "retry", "dropped", "released", "deferred", "dead"]
        var outcomes = [Int](repeating: 0, count: names.count)
        var deadReasons: [String: Int] = [:]
        for update in updates where written.contains(update.id) {
            switch update {
            case .delivered: outcomes[0] += 1
            case .retry: outcomes[1] += 1
            case .dropped: outcomes[2] += 1
            case .release: outcomes[3] += 1
            case .deferred: outcomes[4] += 1
            case .dead(_, let reason, _), .deadMessage(_, let reason, _):
                outcomes[5] += 1
                deadReasons[reason.rawValue, default: 0] += 1
            case .expired:
                outcomes[5] += 1
                deadReasons["Expired", default: 0] += 1
            case .forgetToken(_, .dead, let reason, _, _):
                outcomes[5] += 1
                deadReasons[reason.rawValue, default: 0] += 1
            case .forgetToken:
                outcomes[2] += 1
            }
        }
        for (name, count) in zip(names, outcomes) where count > 0 {
            metrics.increment("herald_deliveries_total", ["app": app, "outcome": name], by: Double(count))
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

    /// Once a tick: pick up changes made outside this process (pause/resume, requeues) and rescue expired leases.
    private func tick() {
        guard !stopping else { return }
        let names = Array(runtimes.keys)
        // Read through the writer, not a reader, after every outcome decided so far: a pause or gate this process
        // decided is never undone by a read that predates its commit.
        perform(outbox.flush(now: Self.monotonicNow()))
        writer.enqueue({ connection in
            // The origins' rows are few: those gated or paused now, the rest deleted here.
            let now = Clock.nowMillis()
            _ = try connection.forgetOpenOrigins(now: now)
            let origins = Dictionary(grouping: try connection.originSwitches(app: nil, now: now), by: \.app)
            return try connection.apps().filter { names.contains($0.name) }.map { state in
                (state, origins[state.name] ?? [], try connection.nextDue(app: state.name))
            }
        }) { result in
            self.queue.async {
                if case .failure = result { self.leases.writeFailed(now: Clock.nowMillis()) }
                if case .success(let states) = result {
                    let now = Clock.nowMillis()
                    for (state, origins, due) in states {
                        guard let runtime = self.runtimes[state.name] else { continue }
                        self.metrics.set(
                            "herald_fcm_connections", ["app": state.name], to: Double(runtime.pool.connections))
                        self.record(runtime)
                        self.perform(
                            runtime.scheduler.observed(state, origins: origins, nextDueAt: due, now: now), on: runtime)
                    }
                }
                self.queue.asyncAfter(deadline: .now() + .milliseconds(self.options.tickMillis)) { self.tick() }
            }
        }
        for case .renew(let ids, let rescue) in leases.ticked(now: Clock.nowMillis()) { renew(ids, rescue: rescue) }
    }

    // MARK: - Carrying out the lease keeper's actions

    /// Renews the leases of `ids` and then, when `rescue`, takes back the expired leases nobody renewed: renewed
    /// first, in the same job, so the rescuer never takes back a row this process still holds.
    private func renew(_ ids: [Int64], rescue: Bool) {
        let (owner, lease) = (self.owner, options.leaseMillis)
        writer.enqueue(durable: false, { connection -> Int in
            let now = Clock.nowMillis()
            _ = try connection.renewLeases(ids, owner: owner, leaseMillis: lease, now: now)
            return rescue ? try connection.rescueExpiredLeases(now: now) : 0
        }) { result in
            switch result {
            case .success(let rescued) where rescued > 0:
                Log.warn("rescued expired leases", ["deliveries": .int(Int64(rescued))])
                self.wake()
            case .failure(let error):
                Log.warn("renewing leases failed", ["error": .string("\(error)")])
                self.queue.async { self.leases.writeFailed(now: Clock.nowMillis()) }
            default:
                break
            }
        }
    }
}
