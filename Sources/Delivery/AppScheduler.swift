import Classify
import Send
import Queue

/// One app's delivery schedule as a state machine, in the manner of swift-nio's: the engine feeds it events (a
/// wake-up, a claim's result, an answer, the provider's readiness, the app's row as stored) and carries out the
/// actions each event returns. It does no I/O, reads no clock and holds no lock, so every rule of when to claim,
/// send, hold back, gate, pause and release lives here, testable without threads, a database or a network.
///
/// A request with an `origin` (a Web Push subscription's push service, SPEC §19) belongs to that origin's fault
/// domain: its answers gate or pause the origin, never the app; the origin gets at most `originConcurrency` of the
/// app's requests in flight; and a claimed request that its origin cannot take now goes back to the queue uncharged,
/// due when the origin can, rather than sit on its lease in front of other origins' requests.
///
/// ```swift
/// var scheduler = AppScheduler(app: app, options: options)
/// for action in scheduler.pump(now: Clock.nowMillis()) { perform(action) }
/// ```
///
/// The provider is asked here only to classify an answer, a pure function. Making a claim's requests (rendering,
/// Web Push's encryption among it) is the `.render` action, carried out by the engine's render stage on every core
/// and answered by `rendered`; meanwhile the claim counts as under way, so nothing more is claimed, and the render's
/// deliveries stay this scheduler's to release (at a stop, a pause, a closed gate, a missing credential) or send.
/// Everything about credentials (obtaining one, renewing it in its last minutes, what a refusal means, whether a
/// renewed one works) is an action the engine carries out against `app.provider.credentials`, answered by an event.
struct AppScheduler {
    enum Action {
        /// Lease up to `limit` ready deliveries; answer with `claimed` or `claimFailed`.
        case claim(limit: Int)
        /// Make the requests for these claimed runs (`RenderStage`); answer with `rendered`.
        case render([ClaimedRun])
        /// Put the request on the wire; answer with `answered`.
        case send(PreparedRequest)
        /// Write these row updates and the plan's app switches (pause, gate).
        case write([DeliveryUpdate], plan: OutcomePlan?)
        /// Obtain the provider's credentials (v1: an access token); answer with `prepared`.
        case prepare
        /// Renew the credentials in the background: the current one is in its last minutes. No answer: sending goes
        /// on with the current one, and `prepare` is asked for if a render finds none first.
        case renewCredentials
        /// The answer to `request` refused the credential it was made with: ask the credentials what that means
        /// (`Credentials.refused`) and answer with `refusalJudged`.
        case credentialRefused(PreparedRequest, TransportResult)
        /// A credential renewed after a refusal is waiting to be proven, and `request` was answered without a
        /// refusal: tell the credentials (`Credentials.accepted`); answer with `credentialProven` once they wait no
        /// more.
        case credentialAccepted(PreparedRequest)
        /// The endpoint says the credential was renewed too often: keep it longer (`Credentials.renewedTooOften`). No
        /// answer.
        case credentialRenewedTooOften
        /// Call `timerFired(at:)` at this Unix millisecond.
        case wake(at: Int64)
        /// Worth a line in the log.
        case note(Note)
    }

    enum Note: Equatable {
        /// The provider's credentials were refused.
        case pausedForCredentials(reason: String)
        /// The endpoint refused the current credential: a new one is obtained.
        case renewingRefusedCredential
        /// FCM refused the sender (401, InvalidApnsCredential).
        case pausedByFCM(reason: String)
        /// Paused from outside (`herald pause`, another instance).
        case pausedOutside(reason: String)
        case resumed
        case gateClosed(until: Int64, status: Int?, reason: GateReason)
        case originGateClosed(origin: String, until: Int64, status: Int?, reason: GateReason)
        /// The origin refused the sender for several different subscriptions in a row (or was paused elsewhere).
        case originPaused(origin: String, reason: String)
        case originResumed(origin: String)
    }

    let app: DeliveryEngine.App
    private let options: DeliveryEngine.Options
    /// `app.maxRate` as a token bucket, consulted before each send.
    private var rate: TokenBucket?

    private(set) var inFlight = 0
    /// Claimed requests waiting for a slot, oldest first.
    private var pending = PendingQueue<PreparedRequest>()
    /// The limit of the claim under way, if one is.
    private var claimLimit: Int?
    /// The claimed runs being rendered (`.render`), until `rendered`: a claim still under way.
    private var rendering: [ClaimedRun]?
    /// Whether a claim may find rows: false after a short claim, until something says otherwise.
    private var mayHaveReady = true
    private(set) var paused = false
    /// The app's gate: requests without an origin close it.
    private var gate = Gate()
    var gateUntil: Int64 { gate.until }
    /// The push-service origins of the app's requests that have something to remember, by origin.
    private(set) var origins: [String: OriginState] = [:]
    /// Origins with requests waiting for their share to free.
    private var waitingOrigins = Set<String>()
    /// Requests waiting behind their origin's share, all origins together: they count in the app's window.
    private var parked = 0
    /// When the oldest of them has waited `parkMillis` (at the earliest; `.max` with none): `pump` runs on every
    /// answer, and looks over the waiting origins only from then on.
    private var parkExpiry = Int64.max
    /// How long a request may wait behind its origin's share before it goes back to the queue: long enough for a busy
    /// origin that answers (a push service's one host) to take it, short enough that a slow one does not hold the
    /// app's window.
    static let parkMillis: Int64 = 1_000
    /// The wake-up asked for and not yet fired; only the earliest is kept.
    private var wakeAt: Int64?
    /// The provider is getting ready; nothing is claimed or sent meanwhile.
    private var preparing = false
    /// Whether the app's provider has credentials to obtain before it sends.
    private let credentialed: Bool
    /// Whether its credentials were obtained and are still good, as far as the events said: not before `prepared`,
    /// nor after a refusal renewed them or a render found none.
    private var credentialReady: Bool
    /// A credential renewed after a refusal has not yet been seen to work: answers are reported to the credentials
    /// (`.credentialAccepted`) until they say it has.
    private var credentialUnproven = false
    /// The provider asked not to be prepared again before this time.
    private var notReadyUntil: Int64 = 0
    private var stopping = false

    init(app: DeliveryEngine.App, options: DeliveryEngine.Options) {
        self.app = app
        self.options = options
        rate = app.maxRate.map { TokenBucket(ratePerSecond: $0) }
        credentialed = app.provider.credentials != nil
        credentialReady = !credentialed
    }

    var pendingCount: Int { pending.count }

    /// The requests' worth of rows a claim may take even past `Options.claimLimit` (which is one multicast request's
    /// worth). Claims go one at a time, each through the writer and back: at one 1000-token request a claim, HMS's
    /// drain sent ~3 of its 64 requests at once and the writer idled 40 % of the time (~78,000 tokens/s); at four,
    /// the writer is the bound. Ten were no faster, and hold the writer longer per claim.
    static let requestsPerClaim = 4

    /// How many claimed requests may wait for a slot: two concurrencies' worth, so that one window's worth is still
    /// there to send while the next claim waits its turn at the writer behind the outcomes being applied (with one,
    /// the window ran dry during every claim: stop-and-wait); with a rate limit no more than ~10 s of sending, so
    /// claimed rows don't sit on their leases behind the bucket.
    var claimBelow: Int {
        guard let rate = app.maxRate else { return 2 * app.concurrency }
        return max(1, min(2 * app.concurrency, Int(rate * 10)))
    }

    // MARK: - Events

    /// Something may have changed (new rows committed, a slot freed): send what waits, claim what is missing.
    mutating func pump(now: Int64) -> [Action] {
        var actions: [Action] = []
        pump(now: now, into: &actions)
        return actions
    }

    /// New deliveries were committed (here or, on a shared queue, elsewhere).
    mutating func rowsCommitted(now: Int64) -> [Action] {
        mayHaveReady = true
        return pump(now: now)
    }

    /// The wake-up asked for at `at` is due. Stale wake-ups (an earlier one replaced it) do nothing.
    mutating func timerFired(at: Int64, now: Int64) -> [Action] {
        guard wakeAt == at else { return [] }
        wakeAt = nil
        mayHaveReady = true
        return pump(now: now)
    }

    /// The claim asked for came back.
    mutating func claimed(_ claim: ClaimResult, now: Int64) -> [Action] {
        let limit = claimLimit ?? options.claimLimit
        claimLimit = nil
        var actions: [Action] = []
        if let state = claim.app {
            paused = state.paused
            gate.seen(until: state.gateUntil, now: now)
        }
        mayHaveReady = claim.deliveries.count + claim.expired + claim.dropped >= limit
        if let due = claim.nextDueAt { schedule(at: due, into: &actions) }
        if stopping {
            write(claim.deliveries.map { .release(id: $0.id) }, plan: nil, into: &actions)
            return actions
        }
        // A message's deliveries come together in a claim (one due time, consecutive ids): each run of them goes
        // to the provider at once, found without hashing every delivery's message id. (Runs of one message split
        // by another's, as retries can be, only make more legacy multicast requests than needed.)
        let deliveries = claim.deliveries
        var runs: [ClaimedRun] = []
        var start = deliveries.startIndex
        while start < deliveries.endIndex {
            let id = deliveries[start].messageID
            var end = start + 1
            while end < deliveries.endIndex, deliveries[end].messageID == id { end += 1 }
            if let message = claim.messages[id] {
                runs.append(ClaimedRun(message: message, deliveries: Array(deliveries[start..<end])))
            }
            start = end
        }
        if !runs.isEmpty {
            // Still under way, and counted in the window, until its requests come back.
            claimLimit = limit
            rendering = runs
            actions.append(.render(runs))
        }
        pump(now: now, into: &actions)
        return actions
    }

    /// The render asked for by `.render` is done. Its requests join the claimed ones waiting for a slot; but the app
    /// may have paused or closed its gate meanwhile, and then they go back to the queue uncharged, as the waiting
    /// ones did. Without a credential, the claim goes back and one is obtained. After a stop, its deliveries were
    /// released already.
    mutating func rendered(_ rendering: Rendering, now: Int64) -> [Action] {
        guard let runs = self.rendering else { return [] }
        self.rendering = nil
        claimLimit = nil
        var actions: [Action] = []
        switch rendering {
        case .noCredential:
            credentialReady = false
            mayHaveReady = true
            write(Self.releases(runs.lazy.flatMap(\.deliveries)), plan: nil, into: &actions)
        case .requests(let requests, let renewalDue):
            if renewalDue { actions.append(.renewCredentials) }
            if paused || gate.until > now {
                write(Self.releases(requests.lazy.flatMap(\.deliveries)), plan: nil, into: &actions)
            } else {
                pending.append(contentsOf: requests)
            }
        }
        pump(now: now, into: &actions)
        return actions
    }

    /// The claim failed (the database is away): look again in a second.
    mutating func claimFailed(now: Int64) -> [Action] {
        claimLimit = nil
        var actions: [Action] = []
        schedule(at: now + 1_000, into: &actions)
        return actions
    }

    /// FCM answered a request sent by a `.send` action (or the transport failed it).
    mutating func answered(
        _ request: PreparedRequest, result: TransportResult, now: Int64, using random: inout some RandomNumberGenerator
    ) -> [Action] {
        inFlight -= 1
        if let origin = request.origin, var state = origins[origin] {
            state.inFlight -= 1
            if state.inFlight < app.originConcurrency { state.fullSince = nil }
            origins[origin] = state
        }
        var actions: [Action] = []
        if case .failure(.cancelled) = result {
            // Cancelled at shutdown: never charged.
            write(request.deliveries.map { .release(id: $0.id) }, plan: nil, into: &actions)
            return actions
        }
        let classification = app.provider.classify(result, of: request, now: now)
        if credentialed, case .response = result {
            if classification.outcomes.contains(where: { if case .requeue = $0 { true } else { false } }) {
                // What the refusal means (renew once, or pause) is the credentials' to say: planned once they have.
                return [.credentialRefused(request, result)]
            }
            if credentialUnproven { actions.append(.credentialAccepted(request)) }
            if classification.credentialRenewedTooOften { actions.append(.credentialRenewedTooOften) }
        }
        settle(request, result: result, classification: classification, now: now, using: &random, into: &actions)
        return actions
    }

    /// The credentials said what the refusal of `request`'s credential means (`.credentialRefused`).
    mutating func refusalJudged(
        _ refusal: CredentialRefusal, request: PreparedRequest, result: TransportResult, now: Int64,
        using random: inout some RandomNumberGenerator
    ) -> [Action] {
        var actions: [Action] = []
        var classification = app.provider.classify(result, of: request, now: now)
        switch refusal {
        case .renew:
            credentialUnproven = true
            credentialReady = false
            actions.append(.note(.renewingRefusedCredential))
        case .stale:
            break
        case .pause:
            // Renewing again would not help: the requeue becomes a pause, for the same reason.
            credentialUnproven = false
            classification.outcomes = classification.outcomes.map {
                if case .requeue(let reason) = $0 { .pauseApp(reason: reason) } else { $0 }
            }
        }
        settle(request, result: result, classification: classification, now: now, using: &random, into: &actions)
        return actions
    }

    /// The credentials no longer wait for proof that a renewed credential works (`.credentialAccepted`).
    mutating func credentialProven() {
        credentialUnproven = false
    }

    /// What an answer does once classified: the plan of its rows, the gate, a pause, releases, the next sends.
    private mutating func settle(
        _ request: PreparedRequest, result: TransportResult, classification: Classification, now: Int64,
        using random: inout some RandomNumberGenerator, into actions: inout [Action]
    ) {
        let classification = singledOut(classification, of: request)
        let status: Int? = if case .response(let status, _, _, _) = result { status } else { nil }
        // A quota error without Retry-After: FCM asks for a minute at least, and every other request would meet
        // the same quota meanwhile.
        let quota = classification.closesGate && classification.retryAfterUntil == nil
            && classification.outcomes.contains { if case .retrySlow = $0 { true } else { false } }
        // The request's fault domain: its origin's gate, or the app's.
        var gate = request.origin.map { origins[$0]?.gate ?? Gate() } ?? self.gate
        // One fault (a reset with a thousand requests in flight, a burst of timeouts or 5xx answers to requests sent
        // together) is one step of the backoff, not one per request: the failures of requests sent before the gate
        // last closed belong to the fault that closed it. They close the gate again from now for that fault's step
        // (they say the endpoint still fails), but never grow it.
        let newFault = classification.closesGate && gate.failed(sentAt: request.sentAt, quota: quota, now: now)
        if let status, (200..<300).contains(status) { gate.quotaFaults = 0 }
        let fallback = quota
            ? gate.backoff(base: options.quotaGateBaseMillis, cap: options.quotaGateCapMillis, quota: true)
            : gate.backoff(base: options.gateBaseMillis, cap: options.gateCapMillis, quota: false)
        var plan = OutcomePlanner.plan(
            classification, for: request, status: status, policy: options.policy, fallbackGateMillis: fallback,
            now: now, using: &random)
        let gateReason = Self.gateReason(result, retryAfter: classification.retryAfterUntil != nil, quota: quota)
        if plan.gateUntil != nil { plan.gateReason = gateReason }

        var updates = plan.updates
        if classification.outcomes.contains(where: { if case .requeue = $0 { true } else { false } }) {
            // Released for the provider to renew its credentials: ready again at once.
            mayHaveReady = true
        }
        if plan.origin == nil, let reason = plan.pauseReason, !paused {
            paused = true
            actions.append(.note(.pausedByFCM(reason: reason)))
        }
        if let until = plan.gateUntil {
            // The rest of a fault's failures, arriving while its gate is closed, keep it closed a moment longer:
            // not worth a log line each.
            let held = !newFault && gate.until > now && classification.retryAfterUntil == nil
            if until > gate.until {
                gate.until = until
                if !held {
                    actions.append(.note(request.origin.map {
                        .originGateClosed(origin: $0, until: until, status: status, reason: gateReason)
                    } ?? .gateClosed(until: until, status: status, reason: gateReason)))
                }
            }
        } else if let status, status < 500 {
            gate.faults = 0
        }
        if let origin = request.origin {
            var state = origins[origin] ?? OriginState()
            state.gate = gate
            refusals(of: request, classification: classification, status: status, origin: &state, plan: &plan,
                     into: &actions)
            if state.paused || state.gate.until > now {
                // Its claimed requests go back to the queue until it can take them: not on their leases.
                let waited = state.waiting.removeAll()
                parked -= waited.count
                updates += Self.deferrals(waited.map(\.request), until: reopening(state, now: now))
                waitingOrigins.remove(origin)
            }
            origins[origin] = state
        } else {
            self.gate = gate
        }
        if paused || self.gate.until > now {
            // Claimed but unsent rows go back to the queue: they must not wait on a lease through a long gate.
            updates += releasePending()
        }
        write(updates, plan: plan, into: &actions)
        pump(now: now, into: &actions)
    }

    /// A subscription refused (401, 403) again after its origin took other pushes since its last refusal is that
    /// subscription's trouble (made with another VAPID key, say), not the origin's: a charged retry that closes no
    /// gate, so it ends by its attempts instead of holding the origin's gate shut a step at a time for ever.
    private func singledOut(_ classification: Classification, of request: PreparedRequest) -> Classification {
        guard let origin = request.origin, let state = origins[origin] else { return classification }
        var singled = classification
        var all = true
        for (index, (delivery, outcome)) in zip(request.deliveries, classification.outcomes).enumerated() {
            guard case .senderRefused(let reason) = outcome, state.refusedBefore.contains(delivery.token),
                !state.refused.contains(delivery.token)
            else {
                all = false
                continue
            }
            singled.outcomes[index] = .retry(reason: reason)
        }
        if all { singled.closesGate = false }
        return singled
    }

    /// The run of refusals of an origin: 401/403 for `options.originPauseRefusals` different subscriptions, with no
    /// push accepted between them, pause it (the VAPID key, or the origin, refuses them all). One subscription
    /// refused again and again is that subscription's trouble, and counts once.
    private func refusals(
        of request: PreparedRequest, classification: Classification, status: Int?, origin state: inout OriginState,
        plan: inout OutcomePlan, into actions: inout [Action]
    ) {
        if let status, (200..<300).contains(status) { state.refused.removeAll() }
        for (delivery, outcome) in zip(request.deliveries, classification.outcomes) {
            guard case .senderRefused(let reason) = outcome, !state.refused.contains(delivery.token) else { continue }
            state.refused.append(delivery.token)
            state.rememberRefused(delivery.token)
            if state.refused.count >= options.originPauseRefusals, !state.paused, let origin = request.origin {
                state.paused = true
                let pause = "\(reason.rawValue) for \(state.refused.count) subscriptions in a row"
                plan.pauseReason = pause
                actions.append(.note(.originPaused(origin: origin, reason: pause)))
            }
        }
    }

    /// The credentials asked for by `.prepare` were obtained, or could not be.
    mutating func prepared(_ readiness: ProviderReadiness, now: Int64) -> [Action] {
        preparing = false
        guard !stopping else { return [] }
        var actions: [Action] = []
        switch readiness {
        case .ready:
            notReadyUntil = 0
            credentialReady = true
            pump(now: now, into: &actions)
        case .retry(let at):
            notReadyUntil = at
            schedule(at: at, into: &actions)
        case .pause(let reason):
            if !paused {
                paused = true
                actions.append(.note(.pausedForCredentials(reason: reason)))
            }
            write([], plan: OutcomePlan(pauseReason: reason), into: &actions)
        }
        return actions
    }

    /// The app's row as stored, read once a tick: a pause, resume or gate set outside this process, and whether
    /// rows fell due.
    mutating func observed(
        _ state: AppState, origins stored: [OriginSwitch] = [], nextDueAt: Int64?, now: Int64
    ) -> [Action] {
        var actions: [Action] = []
        if paused && !state.paused {
            actions.append(.note(.resumed))
            gate.until = state.gateUntil
        } else if !paused && state.paused {
            actions.append(.note(.pausedOutside(reason: state.pauseReason ?? "")))
        }
        paused = state.paused
        gate.seen(until: state.gateUntil, now: now)
        observed(origins: stored, now: now, into: &actions)
        if let nextDueAt, nextDueAt <= now { mayHaveReady = true }
        pump(now: now, into: &actions)
        return actions
    }

    /// The app's gated and paused origins as stored: a resume (the app's, which resumes its origins), and a pause or
    /// gate decided by another instance. Origins with nothing left to remember are forgotten.
    private mutating func observed(origins stored: [OriginSwitch], now: Int64, into actions: inout [Action]) {
        let byOrigin = Dictionary(stored.map { ($0.origin, $0) }, uniquingKeysWith: { first, _ in first })
        for (origin, var state) in origins {
            let row = byOrigin[origin]
            if state.paused, row?.paused != true {
                actions.append(.note(.originResumed(origin: origin)))
                state.paused = false
                state.forgetRefusals()
                state.gate.until = row?.gateUntil ?? 0
            }
            origins[origin] = state
        }
        for row in stored {
            var state = origins[row.origin] ?? OriginState()
            if row.paused, !state.paused {
                state.paused = true
                actions.append(.note(.originPaused(origin: row.origin, reason: row.pauseReason ?? "")))
            }
            state.gate.seen(until: row.gateUntil, now: now)
            origins[row.origin] = state
        }
        // Fault bookkeeping is kept a full backoff cap after its gate opened, so that separate faults still grow it.
        origins = origins.filter { !$0.value.isIdle(now: now, after: options.gateCapMillis) }
    }

    /// Shutdown: nothing more is claimed or sent; returns the releases of every claimed delivery not yet sent, those
    /// being rendered too (their render, when it comes back, is dropped).
    mutating func stop() -> [DeliveryUpdate] {
        stopping = true
        let rendered = Self.releases((rendering ?? []).lazy.flatMap(\.deliveries))
        rendering = nil
        return releasePending() + rendered
    }

    // MARK: - Rules

    private mutating func pump(now: Int64, into actions: inout [Action]) {
        guard !stopping, !paused else { return }
        if gate.until > now {
            schedule(at: gate.until, into: &actions)
            return
        }
        if !credentialReady {
            prepare(now: now, into: &actions)
            return
        }
        var settled: [DeliveryUpdate] = []
        deferLongParked(now: now, settling: &settled, into: &actions)
        while inFlight < app.concurrency, pending.count > 0 || !waitingOrigins.isEmpty {
            if rate != nil, !rate!.take(now: now) {
                schedule(at: rate!.nextTokenAt(now: now), into: &actions)
                break
            }
            guard let request = nextToSend(now: now, settling: &settled) else { break }
            inFlight += 1
            if let origin = request.origin {
                var state = origins[origin] ?? OriginState()
                state.inFlight += 1
                if state.inFlight >= app.originConcurrency { state.fullSince = state.fullSince ?? now }
                origins[origin] = state
            }
            request.markSent(at: now)
            actions.append(.send(request))
        }
        if !settled.isEmpty { write(settled, plan: nil, into: &actions) }
        if parkExpiry < .max { schedule(at: parkExpiry, into: &actions) }
        if claimLimit == nil, mayHaveReady, (pending.count + parked) * 2 < claimBelow {
            // Claim once fewer than half of `claimBelow` wait (one window without a rate limit), up to `claimBelow`:
            // claims come in large steps rather than one per turn of answers, rows wait for a slot about two rounds
            // of answers at most (their leases renewed while they do), and a window is still there to send while
            // the claim waits its turn at the writer.
            // At least `requestsPerClaim` requests' worth for a multicast provider (claims go one at a time).
            let slots = max(1, claimBelow - pending.count - parked)
            let targets = slots.multipliedReportingOverflow(by: app.provider.maxTargetsPerRequest).partialValue
            let limit = min(max(options.claimLimit, Self.requestsPerClaim * app.provider.maxTargetsPerRequest), targets)
            claimLimit = limit
            actions.append(.claim(limit: limit))
        }
    }

    /// The next claimed request that may go now: first those that waited for their origin's share to free (claimed
    /// earlier), then the oldest claimed. Those that must not go are settled on the way into `settling`: a refused
    /// one dead, an expired one expired, one whose origin is gated or paused deferred to when it reopens, and one
    /// over its origin's share parked behind it (up to a share's worth) or deferred.
    private mutating func nextToSend(now: Int64, settling settled: inout [DeliveryUpdate]) -> PreparedRequest? {
        for origin in waitingOrigins where (origins[origin]?.inFlight ?? 0) < app.originConcurrency {
            guard let request = origins[origin]?.waiting.popFirst()?.request else { continue }
            parked -= 1
            if origins[origin]?.waiting.isEmpty != false { waitingOrigins.remove(origin) }
            if request.message.expiresAt <= now {
                settled += request.deliveries.map { .expired(id: $0.id) }
                return nextToSend(now: now, settling: &settled)
            }
            return request
        }
        while let request = pending.popFirst() {
            if let refusal = request.refusal {
                settled += request.deliveries.map { .deadMessage(id: $0.id, reason: refusal, status: nil) }
                continue
            }
            // Its TTL (or TTL 0's window) ran out while it waited for a slot: never sent late.
            if request.message.expiresAt <= now {
                settled += request.deliveries.map { .expired(id: $0.id) }
                continue
            }
            guard let origin = request.origin, var state = origins[origin] else { return request }
            if state.paused || state.gate.until > now {
                settled += Self.deferrals([request], until: reopening(state, now: now))
                continue
            }
            guard state.inFlight >= app.originConcurrency else { return request }
            state.waiting.append(contentsOf: [OriginState.Parked(request: request, since: now)])
            parked += 1
            parkExpiry = min(parkExpiry, now + Self.parkMillis)
            waitingOrigins.insert(origin)
            origins[origin] = state
        }
        return nil
    }

    /// Requests that waited behind their origin's share for `parkMillis` go back to the queue, uncharged, for as long
    /// as its share has been taken (how long the origin takes to answer, within bounds): a slow origin's claimed rows
    /// do not hold the app's window. The oldest left waiting asks for a wake-up when its time comes.
    private mutating func deferLongParked(
        now: Int64, settling settled: inout [DeliveryUpdate], into actions: inout [Action]
    ) {
        guard now >= parkExpiry else { return }
        parkExpiry = .max
        for origin in waitingOrigins {
            guard var state = origins[origin] else { continue }
            var aged: [PreparedRequest] = []
            while let first = state.waiting.first, first.since + Self.parkMillis <= now {
                _ = state.waiting.popFirst()
                aged.append(first.request)
            }
            if !aged.isEmpty {
                parked -= aged.count
                let busy = now - (state.fullSince ?? now)
                settled += Self.deferrals(aged, until: now + min(max(busy, 1_000), options.gateCapMillis))
            }
            if let first = state.waiting.first {
                parkExpiry = min(parkExpiry, first.since + Self.parkMillis)
            } else {
                waitingOrigins.remove(origin)
            }
            origins[origin] = state
        }
    }

    /// When a gated or paused origin may be asked again: its gate's end, or for a pause a look now and then (a resume
    /// of the app resumes it, and the rows come back by then).
    private func reopening(_ state: OriginState, now: Int64) -> Int64 {
        state.paused ? max(state.gate.until, now + options.pausedOriginRecheckMillis) : state.gate.until
    }

    private static func deferrals(_ requests: some Sequence<PreparedRequest>, until: Int64) -> [DeliveryUpdate] {
        requests.flatMap { $0.deliveries.map { .deferred(id: $0.id, until: until, reason: nil, status: nil) } }
    }

    /// The provider cannot send yet (v1: no usable access token). Requests made with the credential it held go
    /// back to the queue uncharged, and it gets ready; `prepared` picks up from there.
    private mutating func prepare(now: Int64, into actions: inout [Action]) {
        if pending.count > 0 {
            mayHaveReady = true
            write(releasePending(), plan: nil, into: &actions)
        }
        guard mayHaveReady, !preparing else { return }
        if notReadyUntil > now {
            schedule(at: notReadyUntil, into: &actions)
            return
        }
        preparing = true
        actions.append(.prepare)
    }

    /// Hands updates to the engine's outbox; a retry is a reason to look again when it falls due.
    private mutating func write(_ updates: [DeliveryUpdate], plan: OutcomePlan?, into actions: inout [Action]) {
        var earliestRetry: Int64?
        for update in updates {
            switch update {
            case .retry(_, let at, _, _), .deferred(_, let at, _, _): earliestRetry = min(earliestRetry ?? at, at)
            default: continue
            }
        }
        actions.append(.write(updates, plan: plan))
        if let earliestRetry { schedule(at: earliestRetry, into: &actions) }
    }

    /// Asks to be woken at `at`, unless an earlier wake-up is already due.
    private mutating func schedule(at: Int64, into actions: inout [Action]) {
        if let existing = wakeAt, existing <= at { return }
        wakeAt = at
        actions.append(.wake(at: at))
    }

    /// Every claimed request not sent, the origins' waiting ones too, back to the queue as they were.
    private mutating func releasePending() -> [DeliveryUpdate] {
        var requests = Array(pending.removeAll())
        for origin in waitingOrigins { requests += origins[origin]?.waiting.removeAll().map(\.request) ?? [] }
        waitingOrigins.removeAll()
        parked = 0
        parkExpiry = .max
        return Self.releases(requests.lazy.flatMap(\.deliveries))
    }

    /// Back to the queue as they were, uncharged.
    private static func releases(_ deliveries: some Sequence<ClaimedDelivery>) -> [DeliveryUpdate] {
        deliveries.map { .release(id: $0.id) }
    }

    /// The short code `herald status` shows for a gate closed by this answer.
    private static func gateReason(_ result: TransportResult, retryAfter: Bool, quota: Bool) -> GateReason {
        switch result {
        case .failure(let failure):
            switch failure {
            case .reset: .reset
            case .timeout: .timeout
            case .connect: .connect
            case .cancelled, .responseTooLarge, .forbiddenAddress, .other: .transport
            }
        case .response(let status, _, _, _):
            retryAfter ? .retryAfter : quota ? .quota : .http(status)
        }
    }
}
