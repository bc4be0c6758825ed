import HTTP
import Support

/// What the simulator's sides share, changed only under the shell's lock (`FCMSimulator.withState`): the
/// request-level faults and their draws, how often each counted token was seen, the message ids, the counters and
/// the request log. Replies are built and sent outside the lock.
public struct SimulatorState: Sendable {
    public struct Faults: Sendable {
        var queued: [FCMSimulator.Fault: Int] = [:]
        var rates: [FCMSimulator.Fault: Double]
        /// The status of an injected server error.
        public internal(set) var failStatus: Int
        public internal(set) var retryAfter: FCMSimulator.RetryAfter?
        /// How late a slowed reply comes.
        public internal(set) var slowMilliseconds: Int

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

    public let configuration: FCMSimulator.Configuration
    let seed: UInt64
    public private(set) var faults: Faults
    var random: SplitMix64
    /// Sightings of tokens and topics whose behaviour depends on how often they were seen.
    var seen: [String: Int] = [:]
    /// The next message id a side hands out (each side writes ids its own way). Never reset, so ids stay unique for
    /// the simulator's life.
    public var nextID: UInt64 = 1
    /// The counters; `record` counts requests and statuses, a side what they held.
    public var stats: FCMSimulator.Stats
    var log: RequestLog

    init(configuration: FCMSimulator.Configuration, seed: UInt64) {
        self.configuration = configuration
        self.seed = seed
        faults = Faults(configuration)
        random = SplitMix64(seed: seed)
        stats = Self.emptyStats(seed: seed)
        log = RequestLog(limit: configuration.requestLogLimit, tokenLimit: configuration.requestLogTokenLimit)
    }

    // MARK: - For the sides

    /// The request-level fault for one send, and whether its reply is slowed; counted in `stats.faults`.
    public mutating func drawFaults() -> (fault: FCMSimulator.Fault?, slow: Bool) {
        // Every rate is drawn for every request, whatever is queued, so the draws depend only on the request count.
        let drawnDrop = random.chance(faults.rates[.drop] ?? 0)
        let drawnUnauthorized = random.chance(faults.rates[.unauthorized] ?? 0)
        let drawnServerError = random.chance(faults.rates[.serverError] ?? 0)
        let drawnSlow = random.chance(faults.rates[.slow] ?? 0)
        // A queued fault comes before a drawn one, so a test's `fail_next` holds whatever rates are configured.
        let fault = Self.replyFaults.first(where: { faults.takeQueued($0) })
            ?? (drawnDrop ? .drop : drawnUnauthorized ? .unauthorized : drawnServerError ? .serverError : nil)
        let slow = faults.takeQueued(.slow) || drawnSlow
        switch fault {
        case .drop?: stats.faults.dropped += 1
        case .unauthorized?: stats.faults.unauthorized += 1
        case .serverError?: stats.faults.serverErrors += 1
        case .slow?, nil: break
        }
        if slow { stats.faults.slow += 1 }
        return (fault, slow)
    }

    /// The error code `behaviour` calls for this time, nil for a delivery (a canonical one included); a counted
    /// behaviour (`unavail-2-…`) counts this sighting of `sightingKey`.
    public mutating func errorCode(_ behaviour: TokenBehaviour, sightingKey: String) -> String? {
        switch behaviour {
        case .deliver, .canonical: return nil
        case .fail(let code): return code
        case .failFirst(let times, let code):
            let sightings = seen[sightingKey, default: 0] + 1
            seen[sightingKey] = sightings
            return sightings <= times ? code : nil
        }
    }

    /// Counts one request and its status, and keeps it in the log.
    public mutating func record(_ request: FCMSimulator.ReceivedRequest) {
        stats.totalRequests += 1
        stats.statuses[request.status, default: 0] += 1
        log.append(request)
    }

    // MARK: - Control

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
    }

    private static func emptyStats(seed: UInt64) -> FCMSimulator.Stats {
        FCMSimulator.Stats(
            seed: seed, totalRequests: 0, statuses: [:], tokensReceived: 0, topicMessages: 0, conditionMessages: 0,
            outcomes: [:], faults: FCMSimulator.FaultCounts(), requests: [])
    }
}
