import HTTP
import Support

extension FCMSimulator {
    /// What the simulator has received since it started or was last reset: the sends its sides counted
    /// (`SimulatorState.record`); `/control` and `/stats` are not counted.
    public struct Stats: Sendable, Equatable {
        /// The seed of the fault draws, to repeat a run with `--seed`.
        public var seed: UInt64
        public var totalRequests: Int
        /// Requests per HTTP status answered (a drop counts under the status it was answered with, see `faults`).
        public var statuses: [Int: Int]
        /// Device tokens in every request that could be parsed, including requests answered with a fault.
        public var tokensReceived: Int
        public var topicMessages: Int
        public var conditionMessages: Int
        /// Answers per recipient: `delivered`, `canonical` (delivered with a new registration ID), or the FCM error
        /// code. Recipients of requests answered 400, 401 or with an injected fault have no outcome.
        public var outcomes: [String: Int]
        public var faults: FaultCounts
        /// The most recent requests in arrival order, at most `Configuration.requestLogLimit`.
        public var requests: [ReceivedRequest]
    }

    /// Injected request-level faults, counted by kind.
    public struct FaultCounts: Sendable, Equatable {
        public var serverErrors = 0
        public var unauthorized = 0
        public var slow = 0
        public var dropped = 0
    }

    /// One send as received: a legacy `POST /fcm/send` (`format` `json` or `plain`), or any other side's (`v1`).
    public struct ReceivedRequest: Sendable, Equatable {
        /// Arrival, Unix milliseconds.
        public var at: Int64
        /// Device tokens in request order (empty for topics, conditions and unparsable bodies).
        public var tokens: [String]
        /// `to` (or v1's `token`) when it named a device token.
        public var to: String?
        /// v1's `fid`: a Firebase Installation ID.
        public var fid: String?
        /// `to` when it named a topic, as sent: `/topics/news`.
        public var topic: String?
        public var condition: String?
        /// `time_to_live` when it was an integer, even out of range.
        public var timeToLive: Int?
        public var collapseKey: String?
        public var priority: String?
        public var dryRun: Bool
        public var format: Format
        /// The HTTP status answered.
        public var status: Int
        /// v1: the `message` object as received (platform blocks and all), to check what reached FCM.
        public var message: JSON?
        /// The protocol it came in: HTTP/1.1 on the cleartext listener, HTTP/2 (or HTTP/1.1) on the TLS one.
        public var http: HTTPRequest.Version = .http1_1

        public init(
            at: Int64, tokens: [String], timeToLive: Int?, dryRun: Bool, format: Format, status: Int,
            http: HTTPRequest.Version = .http1_1
        ) {
            (self.at, self.tokens, self.timeToLive, self.dryRun) = (at, tokens, timeToLive, dryRun)
            (self.format, self.status, self.http) = (format, status, http)
        }
    }
}

// MARK: - JSON

extension FCMSimulator.Stats {
    /// The `GET /stats` body, the sides' members before `requests`; `requestLimit` keeps only the last that many
    /// requests.
    public func json(requestLimit: Int? = nil, sideMembers: [(key: String, value: JSON)] = []) -> JSON {
        let kept = requestLimit.map { requests.suffix(max(0, $0)) } ?? requests[...]
        return .object([
            ("seed", .number(String(seed))),
            ("total_requests", .int(totalRequests)),
            ("statuses", .object(statuses.sorted { $0.key < $1.key }.map { (String($0.key), .int($0.value)) })),
            ("tokens_received", .int(tokensReceived)),
            ("topic_messages", .int(topicMessages)),
            ("condition_messages", .int(conditionMessages)),
            ("outcomes", .object(outcomes.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ("faults", .object([
                ("server_errors", .int(faults.serverErrors)),
                ("unauthorized", .int(faults.unauthorized)),
                ("slow", .int(faults.slow)),
                ("dropped", .int(faults.dropped)),
            ])),
        ] + sideMembers + [("requests", .array(kept.map(\.json)))])
    }
}

extension FCMSimulator.ReceivedRequest {
    public var json: JSON {
        var members: [(key: String, value: JSON)] = [("at", .int(at)), ("tokens", .array(tokens.map(JSON.string)))]
        if let to { members.append(("to", .string(to))) }
        if let fid { members.append(("fid", .string(fid))) }
        if let topic { members.append(("topic", .string(topic))) }
        if let condition { members.append(("condition", .string(condition))) }
        members.append(("time_to_live", timeToLive.map { .int($0) } ?? .null))
        members.append(("collapse_key", collapseKey.map(JSON.string) ?? .null))
        members.append(("priority", priority.map(JSON.string) ?? .null))
        members.append(("dry_run", .bool(dryRun)))
        members.append(("format", .string(format.rawValue)))
        members.append(("status", .int(status)))
        members.append(("http", .string(http.rawValue)))
        if let message { members.append(("message", message)) }
        return .object(members)
    }
}
