import Dispatch
import HMSSimulator
import HTTP
import OAuth
import Support
import Synchronization

/// A stand-in for FCM's legacy HTTP API with deterministic, scriptable behaviour: the test double of Herald's
/// delivery engine, `herald fcm-sim`, and what `herald serve --sandbox` sends to.
///
/// Routes:
/// - `POST /fcm/send`: FCM legacy, JSON or plain text; per-token outcomes by token prefix (see
///   `Configuration.help`), request-level faults at configured rates or queued through `/control`.
/// - `POST /token`: FCM v1's OAuth2 token endpoint, checking RS256 assertions against `Configuration.v1Account`.
/// - `POST /v1/projects/{p}/messages:send`: FCM v1 with the same per-token outcomes and faults
///   (`FCMSimulator+V1.swift`).
/// - `POST /3/device/{token}`: APNs, its provider token checked against `Configuration.apnsAccount`, the same
///   per-token outcomes in Apple's words (`FCMSimulator+APNs.swift`).
/// - `POST /push/{id}`: a Web Push service, VAPID checked, bodies decrypted for the subscriptions it made with
///   `POST /webpush/subscriptions`, the same per-token outcomes as statuses (`FCMSimulator+WebPush.swift`).
/// - `POST /oauth2/v3/token`, `POST /v1/{app_id}/messages:send`, `/hms/…`: HMS Push Kit (`HMSSimulator`).
/// - `POST /control`: queue faults and change them, e.g. `{"fail_next": 2, "status": 503, "retry_after": "2"}`
///   (see `ControlChange.parse`); answers the fault settings now in force.
/// - `GET /stats[?requests=N]`: `Stats.json(requestLimit:)`.
///
/// ```swift
/// let simulator = FCMSimulator(configuration: .init(aliases: ["42": "notreg-42"]))
/// simulator.apply([.next(.serverError, count: 1), .retryAfter(.seconds(2))])
/// // serve it with HTTPServer, or call handle(_:responder:) directly; then:
/// simulator.stats().requests.map(\.timeToLive)
/// ```
///
/// A drop should close the connection without a reply, but `HTTPResponder` cannot close a connection: a drop is
/// answered with an empty 500 carrying `Connection: close`, which `HTTPServer` currently replaces with its own
/// framing, so the connection stays open.
public final class FCMSimulator: HTTPHandler {
    public static let sendBodyLimit = 1 << 20
    public static let controlBodyLimit = 64 << 10

    public let configuration: Configuration
    let state: Mutex<SimulatorState>
    /// The public key of `configuration.v1Account`, parsed once.
    let v1PublicKey: RSAPublicKey?
    /// The public key of `configuration.apnsAccount`, parsed once.
    let apnsPublicKey: P256PublicKey?
    /// Provider tokens already checked, and whether they passed: a client reuses one for 20 to 60 minutes, and an
    /// ES256 verification per request would cost a core at the request rates benchmarks drive over HTTP/2.
    let checkedProviderTokens = Mutex<[String: Bool]>([:])
    /// HMS Push Kit's side, with `configuration.hmsAccount`.
    public let hms: HMSSimulator
    /// Message IDs are `0:<idBase + n>%<idTag>`, like FCM's `0:1489053538475785%a6bd5ed5f9fd7ecd`: the start
    /// time keeps them apart from an earlier run's, the tag from another simulator's.
    private let idBase: UInt64
    private let idTag: String

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let seed = configuration.seed ?? .random(in: .min ... .max)
        state = Mutex(SimulatorState(configuration: configuration, seed: seed))
        v1PublicKey = configuration.v1Account.flatMap { try? RSAPublicKey(pem: $0.publicKeyPEM) }
        apnsPublicKey = configuration.apnsAccount.flatMap { try? P256PublicKey(pem: $0.publicKeyPEM) }
        hms = HMSSimulator(account: configuration.hmsAccount)
        idBase = UInt64(max(0, Clock.nowMillis())) * 1000
        let tag = String(UInt64.random(in: .min ... .max), radix: 16)
        idTag = String(repeating: "0", count: 16 - tag.count) + tag
    }

    // MARK: - In-process control

    /// What was received since start or the last reset, with the last `requestLimit` requests (all kept if nil).
    public func stats(requestLimit: Int? = nil) -> Stats {
        state.withLock { $0.snapshot(requestLimit: requestLimit) }
    }

    /// Applies changes in order, as `POST /control` does.
    public func apply(_ changes: [ControlChange]) {
        state.withLock { state in
            for change in changes { state.apply(change) }
        }
    }

    /// Clears counters, the request log and token sightings, and restores the configured faults.
    public func reset() {
        apply([.reset])
    }

    // MARK: - HTTPHandler

    public func bodyLimit(method: String, path: String) -> Int {
        path == "/fcm/send" || Self.v1Project(path) != nil || Self.apnsDevice(path) != nil
            || Self.webPushID(path) != nil || HMSSimulator.handles(path)
            ? Self.sendBodyLimit : Self.controlBodyLimit
    }

    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        if HMSSimulator.handles(request.path) { return hms.handle(request, responder: responder) }
        switch (request.method, request.path) {
        case ("POST", "/fcm/send"):
            send(request, responder)
        case ("POST", "/control"):
            control(request, responder)
        case ("GET", "/stats"):
            statsEndpoint(request, responder)
        case ("POST", Self.tokenPath):
            tokenEndpoint(request, responder)
        case ("POST", let path) where Self.v1Project(path) != nil:
            v1Send(request, project: Self.v1Project(path)!, responder)
        case ("POST", let path) where Self.apnsDevice(path) != nil:
            apnsSend(request, device: Self.apnsDevice(path)!, responder)
        case ("POST", let path) where Self.webPushID(path) != nil:
            webPushSend(request, id: Self.webPushID(path)!, responder)
        case ("POST", Self.subscriptionsPath):
            makeSubscription(request, responder)
        case (_, "/fcm/send"), (_, "/control"), (_, Self.tokenPath):
            responder.respond(.text(405, "Use POST\n", headers: [("Allow", "POST")]))
        case (_, "/stats"):
            responder.respond(.text(405, "Use GET\n", headers: [("Allow", "GET")]))
        default:
            if Self.v1Project(request.path) != nil {
                return responder.respond(.text(405, "Use POST\n", headers: [("Allow", "POST")]))
            }
            responder.respond(.text(404, "Not found: the simulator serves POST /fcm/send, POST /token, "
                + "POST /v1/projects/{project}/messages:send, POST /3/device/{token}, POST /push/{id}, "
                + "POST /webpush/subscriptions, POST /control, GET /stats\n"))
        }
    }

    // MARK: - /fcm/send

    private func send(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        let format: Format = Self.isJSON(request.header("content-type")) ? .json : .plain
        let parsed = format == .json ? SendRequest.parseJSON(request.body) : SendRequest.parsePlain(request.body)
        let arrival = SimulatorState.Arrival(
            parsed: parsed, format: format, authorized: isAuthorized(request),
            behaviours: (try? parsed.get()).map(behaviours(for:)) ?? [], version: request.version)
        let decision = state.withLock { $0.receive(arrival, nowMillis: Clock.nowMillis()) }
        let response = response(for: decision)
        guard decision.delayMilliseconds > 0 else { return responder.respond(response) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(decision.delayMilliseconds)) {
            responder.respond(response)
        }
    }

    private func behaviours(for request: SendRequest) -> [TokenBehaviour] {
        switch request.target {
        case .tokens(let tokens, _)?:
            let aliases = configuration.aliases
            if aliases.isEmpty { return tokens.map { TokenBehaviour(token: $0) } }
            return tokens.map { TokenBehaviour(token: aliases[$0] ?? $0) }
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
        guard let expected = configuration.serverKey else { return true }
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

    private func response(for decision: SimulatorState.Decision) -> HTTPResponse {
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
        _ request: SendRequest, firstID: UInt64, outcomes: [SimulatorState.Outcome]
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
        return HTTPResponse(status: 200, headers: Self.jsonHeaders, body: body)
    }

    private func jsonTopicReply(firstID: UInt64, outcome: SimulatorState.Outcome) -> HTTPResponse {
        let body: JSON = switch outcome {
        case .delivered: .object([("message_id", .int(numericID(firstID)))])
        case .failed(let code): .object([("error", .string(code))])
        }
        return HTTPResponse(status: 200, headers: Self.jsonHeaders, body: Array(body.serialized().utf8))
    }

    private func plainReply(
        _ request: SendRequest, firstID: UInt64, outcome: SimulatorState.Outcome, status: Int
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

    private static let jsonHeaders = [(name: "Content-Type", value: "application/json; charset=UTF-8")]

    private func messageID(_ number: UInt64, dryRun: Bool) -> String {
        dryRun ? "fake_message_id" : "0:\(idBase &+ number)%\(idTag)"
    }

    private func numericID(_ number: UInt64) -> Int64 {
        Int64(truncatingIfNeeded: (idBase &+ number) & UInt64(Int64.max))
    }

    // MARK: - /control and /stats

    private func control(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        do {
            let changes = try ControlChange.parse(request.body)
            let settings = state.withLock { state in
                for change in changes { state.apply(change) }
                return state.faultsJSON
            }
            responder.respond(.json(200, settings.serialized()))
        } catch {
            responder.respond(.text(400, error.message + "\n"))
        }
    }

    private func statsEndpoint(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        var limit: Int?
        if let text = request.query["requests"] {
            guard let value = Int(text), value >= 0 else {
                return responder.respond(.text(400, "requests must be a whole number of requests to list\n"))
            }
            limit = value
        }
        let stats = stats(requestLimit: limit)
        var body: [UInt8] = []
        body.reserveCapacity(256 + stats.requests.count * 160)
        stats.json().append(to: &body)
        responder.respond(HTTPResponse(status: 200, headers: Self.jsonHeaders, body: body))
    }
}

private extension String {
    var trimmingSpaces: String {
        let view = utf8.drop(while: { $0 == 0x20 || $0 == 0x09 })
        let trimmed = view.reversed().drop(while: { $0 == 0x20 || $0 == 0x09 })
        return String(decoding: trimmed.reversed(), as: UTF8.self)
    }
}
