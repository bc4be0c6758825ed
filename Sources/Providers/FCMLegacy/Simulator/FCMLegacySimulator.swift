import FCMSimulator
import HTTP
import Support

/// FCM legacy's side of the simulator (SPEC §9): `POST /fcm/send`, JSON and plain text, per-token outcomes by token
/// prefix, the request-level faults, multicast and topic replies as FCM writes them.
///
/// ```swift
/// let simulator = FCMSimulator(sides: [FCMLegacySimulator(serverKey: "k")])
/// ```
public final class FCMLegacySimulator: SimulatorSide {
    public static let sendPath = "/fcm/send"

    /// When set, only `Authorization: key=<serverKey>` is accepted; otherwise any non-empty key.
    public let serverKey: String?
    /// Message IDs are `0:<idBase + n>%<idTag>`, like FCM's `0:1489053538475785%a6bd5ed5f9fd7ecd`: the start
    /// time keeps them apart from an earlier run's, the tag from another simulator's.
    private let idBase: UInt64
    private let idTag: String

    public init(serverKey: String? = nil) {
        self.serverKey = serverKey
        idBase = UInt64(max(0, Clock.nowMillis())) * 1000
        let tag = String(UInt64.random(in: .min ... .max), radix: 16)
        idTag = String(repeating: "0", count: 16 - tag.count) + tag
    }

    public convenience init(flags: [String: String]) throws(FCMSimulator.Configuration.ArgumentError) {
        if let key = flags["--server-key"], key.isEmpty {
            throw FCMSimulator.Configuration.ArgumentError("--server-key must not be empty")
        }
        self.init(serverKey: flags["--server-key"])
    }

    // MARK: - SimulatorSide

    public let routes = ["POST " + sendPath]

    public func handles(method: String, path: String) -> Bool {
        path == Self.sendPath
    }

    public func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder) {
        guard request.method == "POST" else {
            return responder.respond(.text(405, "Use POST\n", headers: [("Allow", "POST")]))
        }
        let format: FCMSimulator.Format = Self.isJSON(request.header("content-type")) ? .json : .plain
        let parsed = format == .json ? SendRequest.parseJSON(request.body) : SendRequest.parsePlain(request.body)
        let arrival = SimulatorState.LegacyArrival(
            parsed: parsed, format: format, authorized: isAuthorized(request),
            behaviours: (try? parsed.get()).map { behaviours(for: $0, simulator) } ?? [], version: request.version)
        let decision = simulator.withState { $0.receive(arrival, nowMillis: Clock.nowMillis()) }
        FCMSimulator.respond(response(for: decision), after: decision.delayMilliseconds, to: responder)
    }

    public func announcement(baseURL: String) -> [(key: String, value: String)] {
        [("endpoint", baseURL + Self.sendPath)]
    }

    // MARK: - POST /fcm/send

    private func behaviours(for request: SendRequest, _ simulator: FCMSimulator) -> [TokenBehaviour] {
        switch request.target {
        case .tokens(let tokens, _)?:
            return tokens.map(simulator.behaviour(ofToken:))
        case .topic(let topic)?:
            return [TokenBehaviour(topic: topic.dropFirst("/topics/".count))]
        case .condition?:
            return [.deliver]
        case nil:
            return [.fail(code: "MissingRegistration")]
        }
    }

    /// `Authorization: key=<non-empty>`, and the configured key when there is one (compared in constant time).
    private func isAuthorized(_ request: HTTPRequest) -> Bool {
        guard let header = request.header("authorization")?.trimmingSpaces, header.hasPrefix("key=") else {
            return false
        }
        let key = header.utf8.dropFirst(4)
        guard !key.isEmpty else { return false }
        guard let expected = serverKey else { return true }
        let expectedBytes = Array(expected.utf8)
        var difference = UInt8(key.count == expectedBytes.count ? 0 : 1)
        for (index, byte) in key.enumerated() {
            difference |= byte ^ (index < expectedBytes.count ? expectedBytes[index] : ~byte)
        }
        return difference == 0
    }

    /// FCM reads JSON only for `application/json`; anything else, or no Content-Type, is plain text.
    private static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let media = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimmingSpaces.lowercased() == "application/json"
    }

    // MARK: - Replies

    private func response(for decision: SimulatorState.LegacyDecision) -> HTTPResponse {
        switch decision.reply {
        case .dropped:
            return HTTPResponse(status: 500, headers: [("Connection", "close")])
        case .unauthorized:
            return .text(401, "Unauthorized: the Authorization header must be key=<server key>\n")
        case .serverError(let status, let retryAfter):
            let headers = retryAfter.map { [(name: "Retry-After", value: $0)] } ?? []
            return .text(status, HTTPResponse.reason(for: status) + "\n", headers: headers)
        case .badRequest(let message):
            return .text(400, message + "\n")
        case .answered(let request, let firstID, let outcomes):
            switch (request.format, request.target) {
            case (.plain, _):
                return plainReply(request, firstID: firstID, outcome: outcomes[0], status: decision.status)
            case (.json, .topic?), (.json, .condition?):
                return jsonTopicReply(firstID: firstID, outcome: outcomes[0])
            case (.json, _), (.v1, _):
                return jsonMulticastReply(request, firstID: firstID, outcomes: outcomes)
            }
        }
    }

    private func jsonMulticastReply(
        _ request: SendRequest, firstID: UInt64, outcomes: [SimulatorState.LegacyOutcome]
    ) -> HTTPResponse {
        var success = 0
        var canonical = 0
        var results: [UInt8] = []
        results.reserveCapacity(outcomes.count * 48)
        for (index, outcome) in outcomes.enumerated() {
            if index > 0 { results.append(UInt8(ascii: ",")) }
            switch outcome {
            case .delivered(let newToken):
                success += 1
                results.append(contentsOf: #"{"message_id":"#.utf8)
                appendJSONString(messageID(firstID + UInt64(index), dryRun: request.dryRun), to: &results)
                if let newToken {
                    canonical += 1
                    results.append(contentsOf: #","registration_id":"#.utf8)
                    appendJSONString(newToken, to: &results)
                }
                results.append(UInt8(ascii: "}"))
            case .failed(let code):
                results.append(contentsOf: #"{"error":"#.utf8)
                appendJSONString(code, to: &results)
                results.append(UInt8(ascii: "}"))
            }
        }
        var body = Array(#"{"multicast_id":\#(numericID(firstID - 1)),"success":\#(success),"#.utf8)
        body.append(contentsOf: #""failure":\#(outcomes.count - success),"canonical_ids":\#(canonical),"#.utf8)
        body.append(contentsOf: #""results":["#.utf8)
        body.append(contentsOf: results)
        body.append(contentsOf: "]}".utf8)
        return HTTPResponse(status: 200, headers: FCMSimulator.jsonHeaders, body: body)
    }

    private func jsonTopicReply(firstID: UInt64, outcome: SimulatorState.LegacyOutcome) -> HTTPResponse {
        let body: JSON = switch outcome {
        case .delivered: .object([("message_id", .int(numericID(firstID)))])
        case .failed(let code): .object([("error", .string(code))])
        }
        return HTTPResponse(status: 200, headers: FCMSimulator.jsonHeaders, body: Array(body.serialized().utf8))
    }

    private func plainReply(
        _ request: SendRequest, firstID: UInt64, outcome: SimulatorState.LegacyOutcome, status: Int
    ) -> HTTPResponse {
        switch outcome {
        case .delivered(let newToken):
            let id = "id=" + messageID(firstID, dryRun: request.dryRun)
            return .text(200, newToken.map { id + "\nregistration_id=" + $0 } ?? id)
        case .failed where status != 200:
            return .text(status, "")
        case .failed(let code):
            return .text(200, "Error=" + code)
        }
    }

    private func messageID(_ number: UInt64, dryRun: Bool) -> String {
        dryRun ? "fake_message_id" : "0:\(idBase &+ number)%\(idTag)"
    }

    private func numericID(_ number: UInt64) -> Int64 {
        Int64(truncatingIfNeeded: (idBase &+ number) & UInt64(Int64.max))
    }
}

private extension String {
    var trimmingSpaces: String {
        let view = utf8.drop(while: { $0 == 0x20 || $0 == 0x09 })
        let trimmed = view.reversed().drop(while: { $0 == 0x20 || $0 == 0x09 })
        return String(decoding: trimmed.reversed(), as: UTF8.self)
    }
}
