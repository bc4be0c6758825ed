import FCMSimulator
import Foundation
import HTTP
import Support
import Synchronization

/// The HMS Push Kit side of the simulator (SPEC §21): Huawei's OAuth token endpoint and its send API, with
/// deterministic answers chosen by token prefix, for tests, the sandbox and demos. A `SimulatorSide` that
/// `FCMSimulator` routes its paths to; it is an `HTTPHandler` of its own as well.
///
/// Routes:
/// - `POST /oauth2/v3/token`: the client credentials grant, checked against `account` (any non-empty client when
///   there is none); `{"access_token", "expires_in", "token_type"}`, or `400 {"error": 1101, "sub_error", …}`.
///   Its tokens contain `/`, written `\/` as Huawei's are.
/// - `POST /v1/{app_id}/messages:send`: the access token, the app id, the body's shape (one target, 1–1000 tokens,
///   4096 bytes without them, `data` a string, `collapse_key` −1…100, `ttl`, `urgency`, `click_action`) checked with
///   Huawei's codes; then per token: `notreg-…` and `illegal-…` are refused (80100000 naming them, or 80300007 when
///   all are), `unavail-N-…` answers HTTP 503 to its first N requests, `internal-N-…` 81000001; the rest delivered.
/// - `POST /hms/control`: `{"expire_tokens": true}` makes every access token issued so far expired (80200003).
/// - `GET /hms/stats`: what it received, `Stats`.
///
/// ```swift
/// let hms = HMSSimulator(account: .init(appID: "10000001", clientSecret: "s3cret"))
/// ```
public final class HMSSimulator: HTTPHandler, SimulatorSide {
    public struct Account: Sendable, Equatable {
        public var appID: String
        public var clientID: String
        public var clientSecret: String

        public init(appID: String, clientID: String? = nil, clientSecret: String) {
            (self.appID, self.clientID, self.clientSecret) = (appID, clientID ?? appID, clientSecret)
        }
    }

    /// What the simulator received since start.
    public struct Stats: Sendable, Equatable {
        public var tokenRequests = 0
        public var sendRequests = 0
        /// Device tokens in send requests.
        public var tokens = 0
        public var delivered = 0
        /// Tokens answered as refused (80100000's `illegal_tokens`, 80300007).
        public var refused = 0
        /// Answers by Huawei code, or `HTTP <status>` for an answer without one.
        public var answers: [String: Int] = [:]
        /// The last send request's body.
        public var lastBody: String?

        public var json: JSON {
            .object([
                ("token_requests", .int(tokenRequests)), ("send_requests", .int(sendRequests)),
                ("tokens", .int(tokens)), ("delivered", .int(delivered)), ("refused", .int(refused)),
                ("answers", .object(answers.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ])
        }
    }

    public static let tokenPath = "/oauth2/v3/token"
    public static let accessTokenLifetimeSeconds: Int64 = 3600
    static let maximumMessageBytes = 4096

    public let account: Account?
    private struct State {
        var stats = Stats()
        /// Access token → expiry (Unix ms).
        var issued: [String: Int64] = [:]
        /// How often each counted token (`unavail-N-…`, `internal-N-…`) was seen.
        var sightings: [String: Int] = [:]
    }
    private let state = Mutex(State())

    public init(account: Account? = nil) {
        self.account = account
    }

    /// `--hms-app-id` and `--hms-client-secret-file` go together: the client it accepts, the app id its send API
    /// takes. Without them it accepts any.
    public convenience init(flags: [String: String]) throws(FCMSimulator.Configuration.ArgumentError) {
        typealias ArgumentError = FCMSimulator.Configuration.ArgumentError
        switch (flags["--hms-app-id"], flags["--hms-client-secret-file"]) {
        case (let appID?, let file?):
            guard !appID.isEmpty, appID.utf8.count <= 64, appID.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                throw ArgumentError("--hms-app-id must be the app's number (digits), got \"\(appID.prefix(100))\"")
            }
            let text = FileManager.default.contents(atPath: file).flatMap { String(data: $0, encoding: .utf8) }
            guard let secret = text?.trimmingCharacters(in: .whitespacesAndNewlines), !secret.isEmpty else {
                throw ArgumentError("--hms-client-secret-file: cannot read a client secret from \(file)")
            }
            self.init(account: Account(appID: appID, clientSecret: secret))
        case (_?, nil): throw ArgumentError("--hms-app-id needs --hms-client-secret-file (the client's secret)")
        case (nil, _?): throw ArgumentError("--hms-client-secret-file needs --hms-app-id (the app it is for)")
        case (nil, nil): self.init()
        }
    }

    public func stats() -> Stats { state.withLock { $0.stats } }

    /// Every access token issued so far answers 80200003 from now on.
    public func expireTokens() {
        state.withLock { state in
            for token in state.issued.keys { state.issued[token] = 0 }
        }
    }

    // MARK: - HTTPHandler

    /// Whether `path` is one of this side's.
    public static func handles(_ path: String) -> Bool {
        path == tokenPath || path == "/hms/control" || path == "/hms/stats" || appID(path) != nil
    }

    // MARK: - SimulatorSide

    public let routes = ["POST " + tokenPath, "POST /v1/{app_id}/messages:send", "POST /hms/control", "GET /hms/stats"]

    public func handles(method: String, path: String) -> Bool {
        Self.handles(path)
    }

    public func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder) {
        handle(request, responder: responder)
    }

    public func bodyLimit(method: String, path: String) -> Int { 1 << 20 }

    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        switch (request.method, request.path) {
        case ("POST", Self.tokenPath):
            responder.respond(token(request))
        case ("POST", "/hms/control"):
            if (try? JSON.parse(request.body))?["expire_tokens"]?.boolValue == true { expireTokens() }
            responder.respond(.json(200, "{}"))
        case ("GET", "/hms/stats"):
            responder.respond(.json(200, stats().json.serialized()))
        case ("POST", let path) where Self.appID(path) != nil:
            responder.respond(send(request, appID: Self.appID(path)!))
        default:
            responder.respond(.text(405, "Use POST (GET for /hms/stats)\n"))
        }
    }

    /// `{id}` of `/v1/{id}/messages:send`, or nil for any other path.
    static func appID(_ path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[0].isEmpty, segments[1] == "v1", segments[3] == "messages:send",
              !segments[2].isEmpty, segments[2] != "projects"
        else { return nil }
        return String(segments[2])
    }

    // MARK: - POST /oauth2/v3/token

    private func token(_ request: HTTPRequest) -> HTTPResponse {
        let form = request.formFields
        let now = Clock.nowMillis()
        // Huawei's tokens are base64 with `/` in them, which its JSON writes as `\/`.
        let token = "CV/" + String(UInt64.random(in: .min ... .max), radix: 16) + "/"
            + String(UInt64.random(in: .min ... .max), radix: 16) + "=="
        return state.withLock { state -> HTTPResponse in
            state.stats.tokenRequests += 1
            guard form["grant_type"] == "client_credentials" else {
                return Self.oauthError(1102, 20001, "grant_type must be client_credentials")
            }
            guard let clientID = form["client_id"], !clientID.isEmpty else {
                return Self.oauthError(1101, 20002, "client_id is missing")
            }
            guard let secret = form["client_secret"], !secret.isEmpty else {
                return Self.oauthError(1101, 20171, "client_secret is missing")
            }
            if let account {
                guard clientID == account.clientID else {
                    return Self.oauthError(1101, 20003, "the client_id does not exist")
                }
                guard secret == account.clientSecret else {
                    return Self.oauthError(1101, 12304, "the client_secret is wrong")
                }
            }
            if state.issued.count >= 10_000 { state.issued = state.issued.filter { $0.value > now } }
            state.issued[token] = now + Self.accessTokenLifetimeSeconds * 1000
            let escaped = token.replacingOccurrences(of: "/", with: "\\/")
            return .json(200, #"{"access_token":"\#(escaped)","expires_in":\#(Self.accessTokenLifetimeSeconds),"#
                + #""token_type":"Bearer"}"#)
        }
    }

    private static func oauthError(_ error: Int, _ subError: Int, _ description: String) -> HTTPResponse {
        .json(400, JSON.object([
            ("error", .int(error)), ("sub_error", .int(subError)), ("error_description", .string(description)),
        ]).serialized())
    }

    // MARK: - POST /v1/{app_id}/messages:send

    private func send(_ request: HTTPRequest, appID: String) -> HTTPResponse {
        let now = Clock.nowMillis()
        let bearer = request.header("authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let checked = Self.check(request.body)
        return state.withLock { state -> HTTPResponse in
            state.stats.sendRequests += 1
            state.stats.lastBody = String(decoding: request.body, as: UTF8.self)
            let answer = answer(&state, bearer: bearer, appID: appID, checked: checked, now: now)
            state.stats.answers[answer.key, default: 0] += 1
            return answer.response
        }
    }

    private func answer(
        _ state: inout State, bearer: String?, appID: String, checked: Result<[String], Refusal>, now: Int64
    ) -> (key: String, response: HTTPResponse) {
        guard let bearer, let expiry = state.issued[bearer] else {
            return Self.reply(401, "80200001", "Oauth authentication error")
        }
        guard now < expiry else { return Self.reply(401, "80200003", "Oauth Token expired.") }
        if let account, appID != account.appID {
            return Self.reply(403, "80300002", "There is no permission to send a message to a specified device.")
        }
        let tokens: [String]
        switch checked {
        case .failure(let refusal): return Self.reply(400, refusal.code, refusal.message)
        case .success(let list): tokens = list
        }
        state.stats.tokens += tokens.count
        for token in tokens {
            for (prefix, status) in [("unavail-", 503), ("internal-", 500)] where token.hasPrefix(prefix) {
                let times = Int(token.dropFirst(prefix.count).prefix { $0.isNumber }) ?? 0
                let seen = state.sightings[token, default: 0]
                guard seen < times else { continue }
                state.sightings[token] = seen + 1
                if status == 503 { return ("HTTP 503", .text(503, "Service Unavailable\n")) }
                return Self.reply(500, "81000001", "System inner error")
            }
        }
        let refused = tokens.filter { $0.hasPrefix("notreg-") || $0.hasPrefix("illegal-") }
        state.stats.refused += refused.count
        if !tokens.isEmpty, refused.count == tokens.count {
            return Self.reply(400, "80300007", "All the tokens are invalid")
        }
        state.stats.delivered += tokens.isEmpty ? 1 : tokens.count - refused.count
        guard refused.isEmpty else {
            let msg = JSON.object([
                ("success", .int(tokens.count - refused.count)), ("failure", .int(refused.count)),
                ("illegal_tokens", .array(refused.map(JSON.string))),
            ])
            return Self.reply(200, "80100000", msg.serialized())
        }
        return Self.reply(200, "80000000", "Success")
    }

    private static func reply(_ status: Int, _ code: String, _ msg: String) -> (key: String, response: HTTPResponse) {
        let requestID = String(UInt64.random(in: 1...UInt64(Int64.max)))
        let body = JSON.object([("code", .string(code)), ("msg", .string(msg)), ("requestId", .string(requestID))])
        return (code, .json(status, body.serialized()))
    }

    // MARK: - The body, as Huawei checks it

    struct Refusal: Error, Equatable {
        var code: String
        var message: String
    }

    /// The request's device tokens (none for a topic or condition), or why Huawei would refuse the body.
    static func check(_ body: [UInt8]) -> Result<[String], Refusal> {
        func invalid(_ code: String, _ message: String) -> Result<[String], Refusal> {
            .failure(Refusal(code: code, message: message))
        }
        guard let json = try? JSON.parse(body), case .object(let members)? = json["message"] else {
            return invalid("80100003", "Illegal message: the body must be {\"validate_only\", \"message\": {...}}")
        }
        let targets = members.filter { ["token", "topic", "condition"].contains($0.key) }
        guard targets.count == 1 else {
            return invalid("80100001", "Exactly one of message.token, message.topic and message.condition")
        }
        var tokens: [String] = []
        if targets[0].key == "token" {
            guard let list = targets[0].value.arrayValue?.compactMap(\.stringValue),
                  list.count == targets[0].value.arrayValue?.count, (1...1000).contains(list.count)
            else { return invalid("80300010", "The number of tokens in the message body exceeds the default value") }
            tokens = list
        }
        var withoutTokens: [UInt8] = []
        JSON.object(members.filter { $0.key != "token" }).append(to: &withoutTokens)
        guard withoutTokens.count <= maximumMessageBytes else {
            return invalid("80300008", "The message body size exceeds the default value")
        }
        let message = JSON.object(members)
        if let data = message["data"], data.stringValue == nil {
            return invalid("80100003", "Illegal message: message.data must be a string")
        }
        if let android = message["android"] {
            if let key = android["collapse_key"], !(key.int64Value.map { (-1...100).contains($0) } ?? false) {
                return invalid("80100013", "collapse_key must be an integer from -1 to 100")
            }
            if let urgency = android["urgency"], urgency.stringValue != "HIGH" && urgency.stringValue != "NORMAL" {
                return invalid("80100003", "android.urgency must be HIGH or NORMAL")
            }
            if let ttl = android["ttl"], !(ttl.stringValue.map(isTTL) ?? false) {
                return invalid("80100003", "android.ttl must be seconds, like \"86400s\"")
            }
            if let notification = android["notification"],
               !(notification["click_action"]?["type"]?.int64Value.map { (1...4).contains($0) } ?? false) {
                return invalid("80100003", "android.notification.click_action.type must be 1 to 4")
            }
        }
        return .success(tokens)
    }

    /// `86400`, `86400s`, `1.5s`; at most 15 days.
    private static func isTTL(_ text: String) -> Bool {
        let number = text.hasSuffix("s") ? String(text.dropLast()) : text
        guard let seconds = Double(number), seconds >= 0, number.allSatisfy({ $0.isNumber || $0 == "." }) else {
            return false
        }
        return seconds <= 15 * 86_400
    }
}

extension HMSSimulator {
    public static let help = SimulatorHelp(
        intro: """
            HMS Push Kit (POST /oauth2/v3/token, POST /v1/APP_ID/messages:send): give Herald's hms app "endpoint":
            "http://HOST:PORT" and "token_uri": "http://HOST:PORT/oauth2/v3/token".
            """,
        flags: ["--hms-app-id", "--hms-client-secret-file"],
        options: """
              --hms-app-id ID          HMS Push Kit: with --hms-client-secret-file FILE (the secret alone, whitespace
              --hms-client-secret-file FILE
                                       around it ignored), the token endpoint accepts only that client (its id the
                                       app id) and messages:send only that app id (without them: any client)
            """,
        section: """
            HMS Push Kit (POST /oauth2/v3/token, form grant_type=client_credentials&client_id&client_secret; then
            POST /v1/APP_ID/messages:send with the access token): Huawei's checks of the body (one target, 1 to 1000
            tokens, 4096 bytes without them, data a string, collapse_key -1 to 100, ttl, click_action) with its
            codes, then per token: notreg- and illegal- refused (80100000 naming them, or 80300007 when all are),
            unavail-N- HTTP 503 N times, internal-N- 81000001 N times, the rest 80000000. POST /hms/control
            {"expire_tokens": true} makes issued access tokens expired (80200003); GET /hms/stats counts (a reset
            through /control leaves them).
            """)
}
