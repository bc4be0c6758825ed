import FCMSimulator
import HTTP
import Support

/// FCM legacy's transitions of the shared state: one `POST /fcm/send` in, what to answer out.
extension SimulatorState {
    /// What the handler learned from a request before taking the lock.
    struct LegacyArrival: Sendable {
        var parsed: Result<SendRequest, BadRequest>
        var format: FCMSimulator.Format
        var authorized: Bool
        /// One per recipient, in request order; empty when the body did not parse.
        var behaviours: [TokenBehaviour]
        var version: HTTPRequest.Version = .http1_1
    }

    enum LegacyOutcome: Sendable, Equatable {
        case delivered(canonical: String?)
        case failed(String)
    }

    enum LegacyReply: Sendable {
        case dropped
        case unauthorized
        case serverError(status: Int, retryAfter: String?)
        case badRequest(String)
        /// Per-recipient outcomes; delivered recipient `i` has ID number `firstID + i`, and `firstID - 1` is
        /// the request's own (multicast) ID.
        case answered(SendRequest, firstID: UInt64, outcomes: [LegacyOutcome])
    }

    struct LegacyDecision: Sendable {
        var reply: LegacyReply
        var status: Int
        var delayMilliseconds: Int
    }

    /// Decides the answer to one `POST /fcm/send` and records it.
    mutating func receive(_ arrival: LegacyArrival, nowMillis: Int64) -> LegacyDecision {
        let (fault, slow) = drawFaults()
        var decision: LegacyDecision
        switch fault {
        case .drop?:
            decision = LegacyDecision(reply: .dropped, status: 500, delayMilliseconds: 0)
        case .unauthorized?:
            decision = LegacyDecision(reply: .unauthorized, status: 401, delayMilliseconds: 0)
        case .serverError?:
            let retryAfter = faults.retryAfter?.headerValue(nowMillis: nowMillis)
            decision = LegacyDecision(
                reply: .serverError(status: faults.failStatus, retryAfter: retryAfter), status: faults.failStatus,
                delayMilliseconds: 0)
        case .slow?, nil:
            decision = answer(arrival)
        }
        if slow { decision.delayMilliseconds = faults.slowMilliseconds }
        record(arrival, status: decision.status, nowMillis: nowMillis)
        return decision
    }

    private mutating func answer(_ arrival: LegacyArrival) -> LegacyDecision {
        guard arrival.authorized else { return LegacyDecision(reply: .unauthorized, status: 401, delayMilliseconds: 0) }
        let request: SendRequest
        switch arrival.parsed {
        case .failure(let bad):
            return LegacyDecision(reply: .badRequest(bad.message), status: 400, delayMilliseconds: 0)
        case .success(let parsed): request = parsed
        }
        var outcomes: [LegacyOutcome] = []
        outcomes.reserveCapacity(arrival.behaviours.count)
        for (index, behaviour) in arrival.behaviours.enumerated() {
            let outcome: LegacyOutcome
            if let error = request.messageError {
                outcome = .failed(error)
            } else if case .canonical(let newToken) = behaviour {
                outcome = .delivered(canonical: newToken)
            } else {
                outcome = errorCode(behaviour, sightingKey: Self.sightingKey(request.target, index))
                    .map(LegacyOutcome.failed) ?? .delivered(canonical: nil)
            }
            stats.outcomes[outcome.name, default: 0] += 1
            outcomes.append(outcome)
        }
        let firstID = nextID + 1
        nextID += UInt64(outcomes.count) + 1
        // FCM answers a plain-text Unavailable with HTTP 500 rather than in the body.
        let status = request.format == .plain && outcomes.first == .failed("Unavailable") ? 500 : 200
        return LegacyDecision(
            reply: .answered(request, firstID: firstID, outcomes: outcomes), status: status, delayMilliseconds: 0)
    }

    private mutating func record(_ arrival: LegacyArrival, status: Int, nowMillis: Int64) {
        var entry = FCMSimulator.ReceivedRequest(
            at: nowMillis, tokens: [], timeToLive: nil, dryRun: false, format: arrival.format, status: status,
            http: arrival.version)
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
        record(entry)
    }

    /// Tokens count by their exact text as sent (before aliases), topics by `/topics/<name>`.
    private static func sightingKey(_ target: SendRequest.Target?, _ index: Int) -> String {
        switch target {
        case .tokens(let tokens, _)?: tokens[index]
        case .topic(let topic)?: topic
        case .condition(let condition)?: condition
        case nil: ""
        }
    }
}

extension SimulatorState.LegacyOutcome {
    /// The key in `Stats.outcomes`.
    var name: String {
        switch self {
        case .delivered(nil): "delivered"
        case .delivered: "canonical"
        case .failed(let code): code
        }
    }
}
