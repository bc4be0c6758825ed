import Dispatch
import HTTP
import OAuth
import Support

// MARK: - APNs: POST /3/device/{token}

extension FCMSimulator {
    /// The APNs key the simulator trusts: its public half (PEM), key id and team id.
    public struct APNsAccount: Sendable, Equatable {
        public var publicKeyPEM: String
        public var keyID: String
        public var teamID: String

        public init(publicKeyPEM: String, keyID: String, teamID: String) {
            self.publicKeyPEM = publicKeyPEM
            self.keyID = keyID
            self.teamID = teamID
        }
    }

    static let apnsPrefix = "/3/device/"

    /// `{token}` of `/3/device/{token}`, or nil for any other path.
    static func apnsDevice(_ path: String) -> String? {
        guard path.hasPrefix(apnsPrefix), path.utf8.count > apnsPrefix.utf8.count else { return nil }
        let token = path.dropFirst(apnsPrefix.count)
        return token.contains("/") ? nil : String(token).removingPercentEncoding
    }

    /// Apple's answer, as SPEC §15 lists them: the provider token checked (ES256 with the account's key, its `kid`
    /// and `iss`), `apns-topic` required, a body with `aps`, and the token's prefix (as for FCM: `notreg-` → 410
    /// Unregistered with a timestamp, `invalid-` → 400 BadDeviceToken, `unavail-N-` → 503 the first N times, …).
    /// Answered at once, counted in the stats as a v1-format request.
    func apnsSend(_ request: HTTPRequest, device: String, _ responder: any HTTPResponder) {
        let now = Clock.nowMillis()
        let id = request.header("apns-id") ?? "00000000-0000-4000-8000-000000000000"
        let (status, reason) = apnsAnswer(request, device: device, now: now)
        state.withLock {
            $0.recordAPNs(token: device, status: status, reason: reason, version: request.version, nowMillis: now)
        }
        guard let reason else {
            return responder.respond(HTTPResponse(status: 200, headers: [("apns-id", id)]))
        }
        var body: [(key: String, value: JSON)] = [("reason", .string(reason))]
        if status == 410 { body.append(("timestamp", .int(now))) }
        responder.respond(.json(status, JSON.object(body).serialized(), headers: [("apns-id", id)]))
    }

    private func apnsAnswer(_ request: HTTPRequest, device: String, now: Int64) -> (Int, String?) {
        let header = request.header("authorization") ?? ""
        guard header.hasPrefix("bearer "), isValidProviderToken(String(header.dropFirst("bearer ".count))) else {
            return (403, "InvalidProviderToken")
        }
        guard request.header("apns-topic").map({ !$0.isEmpty }) == true else { return (400, "MissingTopic") }
        guard (try? JSON.parse(request.body))?["aps"] != nil else { return (400, "PayloadEmpty") }
        switch errorCode(for: device) {
        case nil: return (200, nil)
        case "NotRegistered": return (410, "Unregistered")
        case "InvalidApnsCredential": return (403, "InvalidProviderToken")
        case "DeviceMessageRateExceeded", "TopicsMessageRateExceeded": return (429, "TooManyRequests")
        case "Unavailable", "InternalServerError": return (503, "ServiceUnavailable")
        default: return (400, "BadDeviceToken")
        }
    }

    /// The FCM error code a device token's name (or its alias) calls for this time, nil for a delivery: the one rule
    /// of token prefixes, answered by APNs and Web Push in their own words. Counts the sightings `failFirst` needs.
    func errorCode(for device: String) -> String? {
        state.withLock { state in
            switch TokenBehaviour(token: configuration.aliases[device] ?? device) {
            case .deliver, .canonical: return nil
            case .fail(let code): return code
            case .failFirst(let times, let code):
                let sightings = state.seen[device, default: 0] + 1
                state.seen[device] = sightings
                return sightings <= times ? code : nil
            }
        }
    }

    /// ES256 with the account's key, its `kid` and its `iss`. The answer depends on the token alone (the account is
    /// fixed), so it is remembered; the memory is forgotten whole when it holds 64 tokens.
    private func isValidProviderToken(_ token: String) -> Bool {
        if let known = checkedProviderTokens.withLock({ $0[token] }) { return known }
        var valid = false
        if let account = configuration.apnsAccount, let key = apnsPublicKey,
           let verified = try? JWT.verifyES256(token, with: key) {
            valid = verified.header["kid"]?.stringValue == account.keyID
                && verified.claims["iss"]?.stringValue == account.teamID
        }
        checkedProviderTokens.withLock { checked in
            if checked.count >= 64 { checked.removeAll() }
            checked[token] = valid
        }
        return valid
    }
}
