import HTTP
import OAuth
import WebPushCrypto
import Support

/// Everything the simulator remembers, changed only through transitions that return what to answer.
/// The owner holds it behind a lock; replies are built and sent outside it.
struct SimulatorState: Sendable {
    /// What the handler learned from a request before taking the lock.
    struct Arrival: Sendable {
        var parsed: Result<SendRequest, BadRequest>
        var format: FCMSimulator.Format
        var authorized: Bool
        /// One per recipient, in request order; empty when the body did not parse.
        var behaviours: [TokenBehaviour]
        var version: HTTPRequest.Version = .http1_1
    }

    enum Outcome: Sendable, Equatable {
        case delivered(canonical: String?)
        case failed(String)
    }

    enum Reply: Sendable {
        case dropped
        case unauthorized
        case serverError(status: Int, retryAfter: String?)
        case badRequest(String)
        /// Per-recipient outcomes; delivered recipient `i` has ID number `firstID + i`, and `firstID - 1` is
        /// the request's own (multicast) ID.
        case answered(SendRequest, firstID: UInt64, outcomes: [Outcome])
    }

    struct Decision: Sendable {
        var reply: Reply
        var status: Int
        var delayMilliseconds: Int
    }

    struct Faults: Sendable {
        var queued: [FCMSimulator.Fault: Int] = [:]
        var rates: [FCMSimulator.Fault: Double]
        var failStatus: Int
        var retryAfter: FCMSimulator.RetryAfter?
        var slowMilliseconds: Int

        init(_ configuration: FCMSimulator.Configuration) {
            rates = [
                .serverError: configuration.failRate, .unauthorized: configuration.unauthorizedRate,
                .slow: configuration.slowRate, .drop: configuration.dropRate,
            ]
            failStatus = configuration.failStatus
            retryAfter = configuration.retryAfter
            slowMilliseconds = max(0, configuration.slowMilliseconds)
        }

        mutating func takeQueued(_ fault: FCMSimulator.Fault) -> Bool {
            guard let count = queued[fault], count > 0 else { return false }
            queued[fault] = count - 1
            return true
        }
    }

    /// Faults that decide the reply, in order of precedence.
    private static let replyFaults: [FCMSimulator.Fault] = [.drop, .unauthorized, .serverError]

    // Internal rather than private: the FCM v1 transitions (SimulatorState+V1.swift) share them.
    let configuration: FCMSimulator.Configuration
    let seed: UInt64
    var faults: Faults
    var random: SplitMix64
    /// Sightings of tokens and topics whose behaviour depends on how often they were seen.
    var seen: [String: Int] = [:]
    /// Never reset, so IDs stay unique for the simulator's life.
    var nextID: UInt64 = 1
    var stats: FCMSimulator.Stats
    var log: RequestLog
    /// FCM v1's token endpoint: issued access tokens (kept across a reset) and its own faults.
    var oauth = OAuthState()
    /// Web Push: the browsers' keys of the subscriptions the simulator made (`POST /webpush/subscriptions`), by the
    /// endpoint path's last segment, so what arrives for them is decrypted (kept across a reset).
    var subscribers: [String: WebPushSubscriber] = [:]

    init(configuration: FCMSimulator.Configuration, seed: UInt64) {
        self.configuration = configuration
        self.seed = seed
        faults = Faults(configuration)
        random = SplitMix64(seed: seed)
        stats = Self.emptyStats(seed: seed)
        log = RequestLog(limit: configuration.requestLogLimit, tokenLimit: configuration.requestLogTokenLimit)
    }

    // MARK: - Transitions

    /// Decides the answer to one `POST /fcm/send` and records it.
    mutating func receive(_ arrival: Arrival, nowMillis: Int64) -> Decision {
        let (fault, slow) = drawFaults()
        let decision: Decision
        switch fault {
        case .drop?:
            stats.faults.dropped += 1
            decision = Decision(reply: .dropped, status: 500, delayMilliseconds: 0)
        case .unauthorized?:
            stats.faults.unauthorized += 1
            decision = Decision(reply: .unauthorized, status: 401, delayMilliseconds: 0)
        case .serverError?:
            stats.faults.serverErrors += 1
            let retryAfter = faults.retryAfter?.headerValue(nowMillis: nowMillis)
            decision = Decision(
                reply: .serverError(status: faults.failStatus, retryAfter: retryAfter), status: faults.failStatus,
                delayMilliseconds: 0)
        case .slow?, nil:
            decision = answer(arrival)
        }
        let delayed = slow ? Decision(
            reply: decision.reply, status: decision.status, delayMilliseconds: faults.slowMilliseconds) : decision
        if slow { stats.faults.slow += 1 }
        record(arrival, status: delayed.status, nowMillis: nowMillis)
        return delayed
    }

    /// The request-level fault for one send, legacy or v1, and whether its reply is slowed.
    mutating func drawFaults() -> (fault: FCMSimulator.Fault?, slow: Bool) {
        // Every rate is drawn for every request, whatever is queued, so the draws depend only on the request count.
        let drawnDrop = random.chance(faults.rates[.drop] ?? 0)
        let drawnUnauthorized = random.chance(faults.rates[.unauthorized] ?? 0)
        let drawnServerError = random.chance(faults.rates[.serverError] ?? 0)
        let drawnSlow = random.chance(faults.rates[.slow] ?? 0)
        // A queued fault comes before a drawn one, so a test's `fail_next` holds whatever rates are configured.
        let fault = Self.replyFaults.first(where: { faults.takeQueued($0) })
            ?? (drawnDrop ? .drop : drawnUnauthorized ? .unauthorized : drawnServerError ? .serverError : nil)
        let slow = faults.takeQueued(.slow) || drawnSlow
        return (fault, slow)
    }

    private mutating func answer(_ arrival: Arrival) -> Decision {
        guard arrival.authorized else { return Decision(reply: .unauthorized, status: 401, delayMilliseconds: 0) }
        let request: SendRequest
        switch arrival.parsed {
        case .failure(let bad): return Decision(reply: .badRequest(bad.message), status: 400, delayMilliseconds: 0)
        case .success(let parsed): request = parsed
        }
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(arrival.behaviours.count)
        for (index, behaviour) in arrival.behaviours.enumerated() {
            let outcome: Outcome
            if let error = request.messageError {
                outcome = .failed(error)
            } else {
                switch behaviour {
                case .deliver: outcome = .delivered(canonical: nil)
                case .canonical(let newToken): outcome = .delivered(canonical: newToken)
                case .fail(let code): outcome = .failed(code)
                case .failFirst(let times, let code):
                    let key = Self.sightingKey(request.target, index)
                    let sightings = seen[key, default: 0] + 1
                    seen[key] = sightings
                    outcome = sightings <= times ? .failed(code) : .delivered(canonical: nil)
                }
            }
            stats.outcomes[outcome.name, default: 0] += 1
            outcomes.append(outcome)
        }
        let firstID = nextID + 1
        nextID += UInt64(outcomes.count) + 1
        // FCM answers a plain-text Unavailable with HTTP 500 rather than in the body.
        let status = request.format == .plain && outcomes.first == .failed("Unavailable") ? 500 : 200
        return Decision(
            reply: .answered(request, firstID: firstID, outcomes: outcomes), status: status, delayMilliseconds: 0)
    }

    private mutating func record(_ arrival: Arrival, status: Int, nowMillis: Int64) {
        stats.totalRequests += 1
        stats.statuses[status, default: 0] += 1
        var entry = FCMSimulator.ReceivedRequest(
            at: nowMillis, tokens: [], timeToLive: nil, dryRun: false, format: arrival.format, status: status)
        entry.http = arrival.version
        if case .success(let request) = arrival.parsed {
            switch request.target {
            case .tokens(let tokens, let to)?:
                stats.tokensReceived += tokens.count
                entry.tokens = tokens
                entry.to = to
            case .topic(let topic)?:
                stats.topicMessages += 1
                entry.topic = topic
            case .condition(let condition)?:
                stats.conditionMessages += 1
                entry.condition = condition
            case nil:
                break
            }
            entry.timeToLive = request.timeToLive
            entry.collapseKey = request.collapseKey
            entry.priority = request.priority
            entry.dryRun = request.dryRun
        }
        log.append(entry)
    }

    mutating func apply(_ change: ControlChange) {
        switch change {
        case .reset:
            self = SimulatorState(configuration: configuration, seed: seed, keepingIDsFrom: self)
        case .next(let fault, let count):
            faults.queued[fault] = max(0, count)
        case .rate(let fault, let rate):
            faults.rates[fault] = rate
        case .failStatus(let status):
            faults.failStatus = status
        case .retryAfter(let retryAfter):
            faults.retryAfter = retryAfter
        case .retryAfterAsDate(true):
            switch faults.retryAfter {
            case .seconds(let seconds)?: faults.retryAfter = .date(secondsFromNow: seconds)
            case .date?: break
            case .verbatim?, nil: faults.retryAfter = .date(secondsFromNow: 1)
            }
        case .retryAfterAsDate(false):
            if case .date(let seconds)? = faults.retryAfter { faults.retryAfter = .seconds(seconds) }
        case .slowMilliseconds(let milliseconds):
            faults.slowMilliseconds = max(0, milliseconds)
        case .tokenNext, .revokeTokens:
            oauth.apply(change)
        }
    }

    // MARK: - Reading

    func snapshot(requestLimit: Int?) -> FCMSimulator.Stats {
        var copy = stats
        copy.requests = log.requests(last: requestLimit)
        return copy
    }

    /// The fault settings now in force, as `/control` answers them.
    var faultsJSON: JSON {
        func count(_ fault: FCMSimulator.Fault) -> JSON { .int(faults.queued[fault] ?? 0) }
        func rate(_ fault: FCMSimulator.Fault) -> JSON { .double(faults.rates[fault] ?? 0) }
        let retryAfter: JSON = switch faults.retryAfter {
        case .seconds(let seconds)?: .string(String(seconds))
        case .date(let seconds)?: .object([("date_seconds_from_now", .int(seconds))])
        case .verbatim(let text)?: .string(text)
        case nil: .null
        }
        return .object([
            ("fail_next", count(.serverError)), ("unauthorized_next", count(.unauthorized)),
            ("slow_next", count(.slow)), ("drop_next", count(.drop)),
            ("fail_rate", rate(.serverError)), ("unauthorized_rate", rate(.unauthorized)),
            ("slow_rate", rate(.slow)), ("drop_rate", rate(.drop)),
            ("status", .int(faults.failStatus)), ("retry_after", retryAfter),
            ("slow_ms", .int(faults.slowMilliseconds)),
        ])
    }

    // MARK: - Helpers

    private init(configuration: FCMSimulator.Configuration, seed: UInt64, keepingIDsFrom old: SimulatorState) {
        self.init(configuration: configuration, seed: seed)
        nextID = old.nextID
        oauth.issued = old.oauth.issued
    }

    private static func emptyStats(seed: UInt64) -> FCMSimulator.Stats {
        FCMSimulator.Stats(
            seed: seed, totalRequests: 0, statuses: [:], tokensReceived: 0, topicMessages: 0, conditionMessages: 0,
            outcomes: [:], faults: FCMSimulator.FaultCounts(), oauth: FCMSimulator.OAuthCounts(), requests: [])
    }

    /// Tokens count by their exact text as sent (before aliases), topics by `/topics/<name>`.
    static func sightingKey(_ target: SendRequest.Target?, _ index: Int) -> String {
        switch target {
        case .tokens(let tokens, _)?: tokens[index]
        case .topic(let topic)?: topic
        case .condition(let condition)?: condition
        case nil: ""
        }
    }
}

extension SimulatorState.Outcome {
    /// The key in `Stats.outcomes`.
    var name: String {
        switch self {
        case .delivered(nil): "delivered"
        case .delivered: "canonical"
        case .failed(let code): code
        }
    }
}
