import HTTP
import Support

// MARK: - FCM HTTP v1 answers

extension FCMSimulator {
    /// An FCM v1 error as the simulator writes it: `{"error": {"code", "message", "status", "details"}}`.
    struct V1Error: Sendable, Equatable {
        var httpStatus: Int
        /// The canonical code name, `NOT_FOUND`, `INVALID_ARGUMENT`, …
        var status: String
        /// The `FcmError` detail's `errorCode`; nil for errors FCM answers without one (authentication, project).
        var errorCode: String?
        var message: String
        /// A `google.rpc.BadRequest` field violation on this field.
        var field: String?

        /// The v1 answer for a legacy token behaviour's code (`NotRegistered` → 404 `UNREGISTERED`, …); v1's own
        /// names (`UNREGISTERED`, `QUOTA_EXCEEDED`, …) answer as themselves; anything else is a 500 with that code.
        init(code: String) {
            switch code {
            case "NotRegistered", "UNREGISTERED":
                self.init(404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.")
            case "InvalidRegistration", "MissingRegistration", "INVALID_ARGUMENT":
                self.init(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                          "The registration token is not a valid FCM registration token", field: "message.token")
            case "MismatchSenderId", "SENDER_ID_MISMATCH":
                self.init(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch")
            case "InvalidPackageName", "MessageTooBig", "InvalidDataKey", "InvalidTtl", "InvalidParameters",
                "InvalidJson":
                self.init(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument.")
            case "InvalidApnsCredential", "THIRD_PARTY_AUTH_ERROR":
                self.init(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service")
            case "Unavailable", "UNAVAILABLE":
                self.init(503, "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable.")
            case "InternalServerError", "INTERNAL":
                self.init(500, "INTERNAL", "INTERNAL", "Internal error encountered.")
            case "DeviceMessageRateExceeded", "TopicsMessageRateExceeded", "QUOTA_EXCEEDED":
                self.init(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED",
                          "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute'.")
            default:
                self.init(500, "INTERNAL", code, "Internal error encountered.")
            }
        }

        /// A request-level fault with this HTTP status.
        init(faultStatus status: Int) {
            switch status {
            case 429: self.init(code: "QUOTA_EXCEEDED")
            case 500: self.init(code: "INTERNAL")
            default:
                self.init(status, "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable.")
            }
        }

        static let unauthenticated = V1Error(
            401, "UNAUTHENTICATED", nil,
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
                + "valid authentication credential. "
                + "See https://developers.google.com/identity/sign-in/web/devconsole-project.")

        static func permissionDenied(project: String) -> V1Error {
            V1Error(403, "PERMISSION_DENIED", nil, "Permission 'cloudmessaging.messages.create' denied on resource "
                + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
        }

        static func invalid(_ invalid: V1Request.Invalid) -> V1Error {
            V1Error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", invalid.message, field: invalid.field)
        }

        init(_ httpStatus: Int, _ status: String, _ errorCode: String?, _ message: String, field: String? = nil) {
            self.httpStatus = httpStatus
            self.status = status
            self.errorCode = errorCode
            self.message = message
            self.field = field
        }

        var json: JSON {
            var details: [JSON] = []
            if let errorCode {
                details.append(.object([
                    ("@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError"), ("errorCode", .string(errorCode)),
                ]))
            }
            if let field {
                details.append(.object([
                    ("@type", "type.googleapis.com/google.rpc.BadRequest"),
                    ("fieldViolations", .array([
                        .object([("field", .string(field)), ("description", .string(message))]),
                    ])),
                ]))
            }
            var error: [(key: String, value: JSON)] = [
                ("code", .int(httpStatus)), ("message", .string(message)), ("status", .string(status)),
            ]
            if !details.isEmpty { error.append(("details", .array(details))) }
            return .object([("error", .object(error))])
        }
    }
}

extension SimulatorState {
    /// What the v1 handler learned from a request before taking the lock.
    struct V1Arrival: Sendable {
        var parsed: Result<V1Request, V1Request.Invalid>
        var project: String
        var bearerToken: String?
        /// The target's behaviour (after alias lookup); nil when the body did not parse.
        var behaviour: TokenBehaviour?
        var version: HTTPRequest.Version = .http1_1
    }

    enum V1Reply: Sendable, Equatable {
        case dropped
        case error(FCMSimulator.V1Error, retryAfter: String?)
        /// `projects/{p}/messages/{id}`.
        case delivered(name: String)
    }

    struct V1Decision: Sendable {
        var reply: V1Reply
        var status: Int
        var delayMilliseconds: Int
    }

    /// Decides the answer to one `messages:send` and records it: request-level faults first (as for legacy), then
    /// the access token, the project, the body, and the target's behaviour.
    mutating func receiveV1(_ arrival: V1Arrival, nowMillis: Int64) -> V1Decision {
        let (fault, slow) = drawFaults()
        var reply: V1Reply
        switch fault {
        case .drop?:
            stats.faults.dropped += 1
            reply = .dropped
        case .unauthorized?:
            stats.faults.unauthorized += 1
            reply = .error(.unauthenticated, retryAfter: nil)
        case .serverError?:
            stats.faults.serverErrors += 1
            reply = .error(FCMSimulator.V1Error(faultStatus: faults.failStatus),
                           retryAfter: faults.retryAfter?.headerValue(nowMillis: nowMillis))
        case .slow?, nil:
            reply = answerV1(arrival, nowMillis: nowMillis)
        }
        let status = switch reply {
        case .dropped: 500
        case .error(let error, _): error.httpStatus
        case .delivered: 200
        }
        if slow { stats.faults.slow += 1 }
        recordV1(arrival, status: status, nowMillis: nowMillis)
        return V1Decision(reply: reply, status: status, delayMilliseconds: slow ? faults.slowMilliseconds : 0)
    }

    private mutating func answerV1(_ arrival: V1Arrival, nowMillis: Int64) -> V1Reply {
        guard let token = arrival.bearerToken, oauth.isValid(token, now: nowMillis) else {
            return .error(.unauthenticated, retryAfter: nil)
        }
        if let project = configuration.v1Account?.projectID, project != arrival.project {
            return .error(.permissionDenied(project: arrival.project), retryAfter: nil)
        }
        let request: V1Request
        switch arrival.parsed {
        case .failure(let invalid): return .error(.invalid(invalid), retryAfter: nil)
        case .success(let parsed): request = parsed
        }
        let code: String?
        switch arrival.behaviour ?? .deliver {
        case .deliver, .canonical: code = nil  // v1 has no canonical ids
        case .fail(let failure): code = failure
        case .failFirst(let times, let failure):
            let key = request.target.sightingKey
            let sightings = seen[key, default: 0] + 1
            seen[key] = sightings
            code = sightings <= times ? failure : nil
        }
        if let code {
            let error = FCMSimulator.V1Error(code: code)
            stats.outcomes[error.errorCode ?? error.status, default: 0] += 1
            return .error(error, retryAfter: nil)
        }
        stats.outcomes["delivered", default: 0] += 1
        let id = nextID
        nextID += 1
        let name = request.validateOnly ? "fake_message_id" : String(id)
        return .delivered(name: "projects/\(arrival.project)/messages/\(name)")
    }

    /// An APNs request (`FCMSimulator.apnsSend`): counted like a v1 send to one token, its answer by Apple's reason.
    mutating func recordAPNs(
        token: String, status: Int, reason: String?, version: HTTPRequest.Version, nowMillis: Int64
    ) {
        stats.totalRequests += 1
        stats.statuses[status, default: 0] += 1
        stats.tokensReceived += 1
        stats.outcomes[reason ?? "delivered", default: 0] += 1
        var entry = FCMSimulator.ReceivedRequest(
            at: nowMillis, tokens: [token], timeToLive: nil, dryRun: false, format: .v1, status: status)
        entry.to = token
        entry.http = version
        log.append(entry)
    }

    private mutating func recordV1(_ arrival: V1Arrival, status: Int, nowMillis: Int64) {
        stats.totalRequests += 1
        stats.statuses[status, default: 0] += 1
        var entry = FCMSimulator.ReceivedRequest(
            at: nowMillis, tokens: [], timeToLive: nil, dryRun: false, format: .v1, status: status)
        entry.http = arrival.version
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
        log.append(entry)
    }

    // MARK: - The token endpoint

    /// What the token endpoint's checks found, made outside the lock (signature checks take a while).
    enum AssertionCheck: Sendable, Equatable {
        case valid
        /// RFC 6749 §5.2: `error` and `error_description`.
        case invalid(error: String, description: String)
    }

    enum TokenReply: Sendable, Equatable {
        case token(String, expiresIn: Int)
        case refused(error: String, description: String)
        case unavailable
    }

    /// Records one `POST /token` and decides its answer: a queued fault, the checks' refusal, or a new token.
    mutating func receiveTokenRequest(_ check: AssertionCheck, token: String, nowMillis: Int64) -> TokenReply {
        stats.oauth.tokenRequests += 1
        switch oauth.takeQueued() {
        case .refuse?:
            stats.oauth.refused += 1
            return .refused(error: "invalid_grant", description: "Refused by the simulator (token_refuse_next).")
        case .unavailable?:
            stats.oauth.failed += 1
            return .unavailable
        case nil:
            break
        }
        if case .invalid(let error, let description) = check {
            stats.oauth.refused += 1
            return .refused(error: error, description: description)
        }
        let lifetime = max(1, configuration.tokenLifetimeSeconds)
        oauth.issue(token, expiresAt: nowMillis + Int64(lifetime) * 1000, now: nowMillis)
        stats.oauth.tokensIssued += 1
        return .token(token, expiresIn: lifetime)
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
