import FCMSimulator
import HTTP
import OAuth
import Support
import Synchronization

/// FCM HTTP v1's side of the simulator: Google's OAuth2 token endpoint (`POST /token`, RS256 assertions checked
/// against `account`) and `POST /v1/projects/{p}/messages:send` with the shared per-token outcomes and request-level
/// faults, answered in v1's words (`V1Error`).
///
/// ```swift
/// let simulator = FCMSimulator(sides: [FCMV1Simulator(account: try .init(serviceAccountFile: "sa.json"))])
/// ```
public final class FCMV1Simulator: SimulatorSide {
    public static let tokenPath = "/token"
    static let v1Prefix = "/v1/projects/"
    static let v1Suffix = "/messages:send"

    /// The service account whose public key checks token-endpoint assertions; nil refuses every one.
    public let account: Account?
    /// `expires_in` of the access tokens the token endpoint issues.
    public let tokenLifetimeSeconds: Int
    /// The public key of `account`, parsed once.
    private let publicKey: RSAPublicKey?
    private let oauth = Mutex(OAuthState())

    public init(account: Account? = nil, tokenLifetimeSeconds: Int = 3600) {
        self.account = account
        self.tokenLifetimeSeconds = max(1, tokenLifetimeSeconds)
        publicKey = account.flatMap { try? RSAPublicKey(pem: $0.publicKeyPEM) }
    }

    public convenience init(flags: [String: String]) throws(FCMSimulator.Configuration.ArgumentError) {
        var account: Account?
        if let file = flags["--service-account"] {
            do {
                account = try Account(serviceAccountFile: file)
            } catch {
                throw FCMSimulator.Configuration.ArgumentError("--service-account: \(error)")
            }
        }
        let lifetime = try flags["--token-lifetime"].map { value throws(FCMSimulator.Configuration.ArgumentError) in
            try FCMSimulator.Configuration.whole("--token-lifetime", value, upTo: 86_400)
        }
        self.init(account: account, tokenLifetimeSeconds: lifetime ?? 3600)
    }

    /// `POST /token` requests and their answers since start or the last reset.
    public func oauthCounts() -> OAuthCounts {
        oauth.withLock { $0.counts }
    }

    /// `{p}` of `/v1/projects/{p}/messages:send`, or nil for any other path.
    static func project(_ path: String) -> String? {
        guard path.hasPrefix(v1Prefix), path.hasSuffix(v1Suffix),
              path.utf8.count > v1Prefix.utf8.count + v1Suffix.utf8.count
        else { return nil }
        let project = path.dropFirst(v1Prefix.count).dropLast(v1Suffix.count)
        return project.contains("/") ? nil : String(project)
    }

    // MARK: - SimulatorSide

    public let routes = ["POST " + tokenPath, "POST " + v1Prefix + "{project}" + v1Suffix]

    public func handles(method: String, path: String) -> Bool {
        path == Self.tokenPath || Self.project(path) != nil
    }

    public func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder) {
        guard request.method == "POST" else {
            return responder.respond(.text(405, "Use POST\n", headers: [("Allow", "POST")]))
        }
        guard let project = Self.project(request.path) else { return tokenEndpoint(request, responder) }
        send(request, project: project, simulator, responder)
    }

    public let controlKeys = ["token_fail_next", "token_refuse_next", "revoke_tokens"]

    public func control(_ key: String, _ value: JSON) throws(BadRequest) -> SimulatorSideChange {
        if key == "revoke_tokens" {
            guard let revoke = value.boolValue else {
                throw BadRequest(message: "\"revoke_tokens\" must be true or false")
            }
            return SimulatorSideChange { [self] in if revoke { oauth.withLock { $0.issued.removeAll() } } }
        }
        let fault: TokenFault = key == "token_refuse_next" ? .refuse : .unavailable
        let count = try ControlChange.count(key, value)
        return SimulatorSideChange { [self] in oauth.withLock { $0.queued[fault] = count } }
    }

    /// Issued access tokens stay valid.
    public func reset() {
        oauth.withLock { $0.reset() }
    }

    public var statsMembers: [(key: String, value: JSON)] {
        [("oauth", oauthCounts().json)]
    }

    public func announcement(baseURL: String) -> [(key: String, value: String)] {
        [("v1_endpoint", baseURL), ("token_uri", baseURL + Self.tokenPath)]
    }

    // MARK: - POST /token

    /// Google's OAuth2 token endpoint for the JWT bearer grant (RFC 7523): checks the assertion's signature against
    /// the configured service account's public key, its issuer, audience (this endpoint's URL), scope, and
    /// lifetime, and answers `{"access_token", "expires_in", "token_type": "Bearer"}` or `400 {"error",
    /// "error_description"}` with Google's wording.
    private func tokenEndpoint(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        let now = Clock.nowMillis()
        let check = checkAssertion(request, now: now)
        let token = "sim-" + String(UInt64.random(in: .min ... .max), radix: 16)
            + String(UInt64.random(in: .min ... .max), radix: 16)
        let reply = oauth.withLock {
            $0.receive(check, token: token, lifetime: tokenLifetimeSeconds, nowMillis: now)
        }
        switch reply {
        case .token(let token, let expiresIn):
            let body: JSON = .object([
                ("access_token", .string(token)), ("expires_in", .int(expiresIn)), ("token_type", "Bearer"),
            ])
            responder.respond(.json(200, body.serialized(), headers: [("Cache-Control", "no-store")]))
        case .refused(let error, let description):
            let body: JSON = .object([("error", .string(error)), ("error_description", .string(description))])
            responder.respond(.json(400, body.serialized()))
        case .unavailable:
            responder.respond(.json(503, #"{"error":"temporarily_unavailable"}"#))
        }
    }

    private func checkAssertion(_ request: HTTPRequest, now: Int64) -> OAuthState.AssertionCheck {
        let form = request.formFields
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return .invalid(error: "unsupported_grant_type", description: "Invalid grant_type: "
                + (form["grant_type"].map { String($0.prefix(100)) } ?? ""))
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return .invalid(error: "invalid_request", description: "Missing required parameter: assertion")
        }
        guard let account, let publicKey else {
            return .invalid(error: "invalid_grant", description:
                "The simulator has no service account to check assertions with: start it with --service-account FILE")
        }
        let decoded: JWT.Decoded
        do {
            decoded = try JWT.verify(assertion, with: publicKey)
        } catch {
            return .invalid(error: "invalid_grant", description: error.description)
        }
        let claims = decoded.claims
        guard claims["iss"]?.stringValue == account.clientEmail else {
            return .invalid(error: "invalid_grant", description: "Invalid email or User ID")
        }
        // The URL the client asked: https:// when it came over the TLS listener.
        let audience = request.scheme.rawValue + "://" + (request.header("host") ?? "") + request.path
        guard claims["aud"]?.stringValue == audience else {
            return .invalid(error: "invalid_grant", description:
                "Invalid JWT: Failed audience check. The right audience is \(audience)")
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ")
        guard scopes.contains(where: { $0 == JWT.firebaseMessagingScope
                || $0 == "https://www.googleapis.com/auth/cloud-platform" })
        else {
            return .invalid(error: "invalid_scope", description: "Invalid OAuth scope or ID token audience provided.")
        }
        let seconds = now / 1000
        guard let iat = claims["iat"]?.int64Value, let exp = claims["exp"]?.int64Value, exp > seconds,
              iat <= seconds + 60, exp - iat <= JWT.maximumLifetime, exp > iat
        else {
            return .invalid(error: "invalid_grant", description: "Invalid JWT: Token must be a short-lived token "
                + "(60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        return .valid
    }

    // MARK: - POST /v1/projects/{p}/messages:send

    private func send(
        _ request: HTTPRequest, project: String, _ simulator: FCMSimulator, _ responder: any HTTPResponder
    ) {
        let now = Clock.nowMillis()
        let parsed = V1Request.parse(request.body)
        var authenticated = false
        if let header = request.header("authorization"), header.hasPrefix("Bearer ") {
            let bearer = String(header.dropFirst("Bearer ".count))
            authenticated = oauth.withLock { $0.isValid(bearer, now: now) }
        }
        let behaviour = (try? parsed.get()).map { request -> TokenBehaviour in
            switch request.target {
            case .token(let token), .fid(let token): simulator.behaviour(ofToken: token)
            case .topic(let topic): TokenBehaviour(topic: Substring(topic))
            case .condition: .deliver
            }
        }
        let arrival = SimulatorState.V1Arrival(
            parsed: parsed, project: project, authenticated: authenticated, behaviour: behaviour,
            version: request.version)
        let decision = simulator.withState { $0.receiveV1(arrival, project: account?.projectID, nowMillis: now) }
        let response: HTTPResponse
        switch decision.reply {
        case .dropped:
            response = HTTPResponse(status: 500, headers: [("Connection", "close")])
        case .error(let error, let retryAfter):
            var headers = FCMSimulator.jsonHeaders
            if let retryAfter { headers.append(("Retry-After", retryAfter)) }
            response = HTTPResponse(
                status: error.httpStatus, headers: headers, body: Array(error.json.serialized().utf8))
        case .delivered(let name):
            response = HTTPResponse(
                status: 200, headers: FCMSimulator.jsonHeaders,
                body: Array(JSON.object([("name", .string(name))]).serialized().utf8))
        }
        FCMSimulator.respond(response, after: decision.delayMilliseconds, to: responder)
    }
}
