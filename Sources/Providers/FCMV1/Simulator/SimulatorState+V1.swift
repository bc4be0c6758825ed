import FCMSimulator
import HTTP
import Support

/// FCM v1's transitions of the shared state: one `messages:send` in, what to answer out.
extension SimulatorState {
    /// What the v1 handler learned from a request before taking the lock.
    struct V1Arrival: Sendable {
        var parsed: Result<V1Request, V1Request.Invalid>
        var project: String
        /// Whether the bearer token is one the token endpoint issued and still valid.
        var authenticated: Bool
        /// The target's behaviour (after alias lookup); nil when the body did not parse.
        var behaviour: TokenBehaviour?
        var version: HTTPRequest.Version = .http1_1
    }

    enum V1Reply: Sendable, Equatable {
        case dropped
        case error(FCMV1Simulator.V1Error, retryAfter: String?)
        /// `projects/{p}/messages/{id}`.
        case delivered(name: String)
    }

    struct V1Decision: Sendable {
        var reply: V1Reply
        var status: Int
        var delayMilliseconds: Int
    }

    /// Decides the answer to one `messages:send` and records it: request-level faults first (as for legacy), then
    /// the access token, the project (`project` is the service account's, when it has one), the body, and the
    /// target's behaviour.
    mutating func receiveV1(_ arrival: V1Arrival, project: String?, nowMillis: Int64) -> V1Decision {
        let (fault, slow) = drawFaults()
        var reply: V1Reply
        switch fault {
        case .drop?:
            reply = .dropped
        case .unauthorized?:
            reply = .error(.unauthenticated, retryAfter: nil)
        case .serverError?:
            reply = .error(FCMV1Simulator.V1Error(faultStatus: faults.failStatus),
                           retryAfter: faults.retryAfter?.headerValue(nowMillis: nowMillis))
        case .slow?, nil:
            reply = answerV1(arrival, project: project)
        }
        let status = switch reply {
        case .dropped: 500
        case .error(let error, _): error.httpStatus
        case .delivered: 200
        }
        recordV1(arrival, status: status, nowMillis: nowMillis)
        return V1Decision(reply: reply, status: status, delayMilliseconds: slow ? faults.slowMilliseconds : 0)
    }

    private mutating func answerV1(_ arrival: V1Arrival, project: String?) -> V1Reply {
        guard arrival.authenticated else { return .error(.unauthenticated, retryAfter: nil) }
        if let project, project != arrival.project {
            return .error(.permissionDenied(project: arrival.project), retryAfter: nil)
        }
        let request: V1Request
        switch arrival.parsed {
        case .failure(let invalid): return .error(.invalid(invalid), retryAfter: nil)
        case .success(let parsed): request = parsed
        }
        // v1 has no canonical ids: a canonical behaviour is a delivery.
        if let code = errorCode(arrival.behaviour ?? .deliver, sightingKey: request.target.sightingKey) {
            let error = FCMV1Simulator.V1Error(code: code)
            stats.outcomes[error.errorCode ?? error.status, default: 0] += 1
            return .error(error, retryAfter: nil)
        }
        stats.outcomes["delivered", default: 0] += 1
        let id = nextID
        nextID += 1
        let name = request.validateOnly ? "fake_message_id" : String(id)
        return .delivered(name: "projects/\(arrival.project)/messages/\(name)")
    }

    private mutating func recordV1(_ arrival: V1Arrival, status: Int, nowMillis: Int64) {
        var entry = FCMSimulator.ReceivedRequest(
            at: nowMillis, tokens: [], timeToLive: nil, dryRun: false, format: .v1, status: status,
            http: arrival.version)
        if case .success(let request) = arrival.parsed {
            switch request.target {
            case .token(let token):
                stats.tokensReceived += 1
                entry.tokens = [token]
                entry.to = token
            case .fid(let fid):
                stats.tokensReceived += 1
                entry.tokens = [fid]
                entry.fid = fid
            case .topic(let topic):
                stats.topicMessages += 1
                entry.topic = topic
            case .condition(let condition):
                stats.conditionMessages += 1
                entry.condition = condition
            }
            entry.timeToLive = request.timeToLive
            entry.collapseKey = request.collapseKey
            entry.priority = request.priority
            entry.dryRun = request.validateOnly
            entry.message = request.message
        }
        record(entry)
    }
}

extension V1Request.Target {
    /// Counted behaviours (`unavail-2-…`) count sightings under the same keys as legacy sends do.
    var sightingKey: String {
        switch self {
        case .token(let token), .fid(let token): token
        case .topic(let topic): "/topics/" + topic
        case .condition(let condition): condition
        }
    }
}
