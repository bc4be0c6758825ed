import Dispatch
import HTTP
import OAuth
import Support

// MARK: - FCM HTTP v1: the token endpoint and messages:send

extension FCMSimulator {
    public static let tokenPath = "/token"
    static let v1Prefix = "/v1/projects/"
    static let v1Suffix = "/messages:send"

    /// `{p}` of `/v1/projects/{p}/messages:send`, or nil for any other path.
    static func v1Project(_ path: String) -> String? {
        guard path.hasPrefix(v1Prefix), path.hasSuffix(v1Suffix),
              path.utf8.count > v1Prefix.utf8.count + v1Suffix.utf8.count
        else { return nil }
        let project = path.dropFirst(v1Prefix.count).dropLast(v1Suffix.count)
        return project.contains("/") ? nil : String(project)
    }

    // MARK: - POST /token

    /// Google's OAuth2 token endpoint for the JWT bearer grant (RFC 7523): checks the assertion's signature against
    /// the configured service account's public key, its issuer, audience (this endpoint's URL), scope, and
    /// lifetime, and answers `{"access_token", "expires_in", "token_type": "Bearer"}` or `400 {"error",
    /// "error_description"}` with Google's wording.
    func tokenEndpoint(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        let now = Clock.nowMillis()
        let check = checkAssertion(request, now: now)
        let token = "sim-" + String(UInt64.random(in: .min ... .max), radix: 16)
            + String(UInt64.random(in: .min ... .max), radix: 16)
        let reply = state.withLock { $0.receiveTokenRequest(check, token: token, nowMillis: now) }
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

    private func checkAssertion(_ request: HTTPRequest, now: Int64) -> SimulatorState.AssertionCheck {
        let form = request.formFields
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return .invalid(error: "unsupported_grant_type", description: "Invalid grant_type: "
                + (form["grant_type"].map { String($0.prefix(100)) } ?? ""))
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return .invalid(error: "invalid_request", description: "Missing required parameter: assertion")
        }
        guard let account = configuration.v1Account, let key = v1PublicKey else {
            return .invalid(error: "invalid_grant", description:
                "The simulator has no service account to check assertions with: start it with --service-account FILE")
        }
        let decoded: JWT.Decoded
        do {
            decoded = try JWT.verify(assertion, with: key)
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

    func v1Send(_ request: HTTPRequest, project: String, _ responder: any HTTPResponder) {
        let parsed = V1Request.parse(request.body)
        var bearer: String?
        if let header = request.header("authorization"), header.hasPrefix("Bearer ") {
            bearer = String(header.dropFirst("Bearer ".count))
        }
        let behaviour = (try? parsed.get()).map { request -> TokenBehaviour in
            switch request.target {
            case .token(let token), .fid(let token): TokenBehaviour(token: configuration.aliases[token] ?? token)
            case .topic(let topic): TokenBehaviour(topic: Substring(topic))
            case .condition: .deliver
            }
        }
        let arrival = SimulatorState.V1Arrival(
            parsed: parsed, project: project, bearerToken: bearer, behaviour: behaviour, version: request.version)
        let decision = state.withLock { $0.receiveV1(arrival, nowMillis: Clock.nowMillis()) }
        let response: HTTPResponse
        switch decision.reply {
        case .dropped:
            response = HTTPResponse(status: 500, headers: [("Connection", "close")])
        case .error(let error, let retryAfter):
            var headers = [(name: "Content-Type", value: "application/json; charset=UTF-8")]
            if let retryAfter { headers.append(("Retry-After", retryAfter)) }
            response = HTTPResponse(
                status: error.httpStatus, headers: headers, body: Array(error.json.serialized().utf8))
        case .delivered(let name):
            response = HTTPResponse(
                status: 200, headers: [("Content-Type", "application/json; charset=UTF-8")],
                body: Array(JSON.object([("name", .string(name))]).serialized().utf8))
        }
        guard decision.delayMilliseconds > 0 else { return responder.respond(response) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(decision.delayMilliseconds)) {
            responder.respond(response)
        }
    }
}
