import FCMSimulator
import Foundation
import HTTP
import OAuth
import Support
import Synchronization

/// APNs' side of the simulator (SPEC §15): `POST /3/device/{token}`, the provider token checked against `account`,
/// the shared per-token outcomes in Apple's words. Served over the TLS listener, as Apple's is (HTTP/2).
///
/// ```swift
/// let simulator = FCMSimulator(sides: [APNsSimulator(account: .init(publicKeyPEM: pem, keyID: "K", teamID: "T"))])
/// ```
public final class APNsSimulator: SimulatorSide {
    /// The APNs key the simulator trusts: its public half (PEM), key id and team id.
    public struct Account: Sendable, Equatable {
        public var publicKeyPEM: String
        public var keyID: String
        public var teamID: String

        public init(publicKeyPEM: String, keyID: String, teamID: String) {
            self.publicKeyPEM = publicKeyPEM
            self.keyID = keyID
            self.teamID = teamID
        }
    }

    static let prefix = "/3/device/"

    /// The key whose provider tokens it accepts; nil refuses every one. Only the sandbox sets one.
    public let account: Account?
    /// The public key of `account`, parsed once.
    private let publicKey: P256PublicKey?
    /// Provider tokens already checked, and whether they passed: a client reuses one for 20 to 60 minutes, and an
    /// ES256 verification per request would cost a core at the request rates benchmarks drive over HTTP/2.
    private let checkedProviderTokens = Mutex<[String: Bool]>([:])

    public init(account: Account? = nil) {
        self.account = account
        publicKey = account.flatMap { try? P256PublicKey(pem: $0.publicKeyPEM) }
    }

    public convenience init(flags: [String: String]) {
        self.init()
    }

    /// `{token}` of `/3/device/{token}`, or nil for any other path.
    static func device(_ path: String) -> String? {
        guard path.hasPrefix(prefix), path.utf8.count > prefix.utf8.count else { return nil }
        let token = path.dropFirst(prefix.count)
        return token.contains("/") ? nil : String(token).removingPercentEncoding
    }

    // MARK: - SimulatorSide

    public let routes = ["POST " + prefix + "{token}"]

    public func handles(method: String, path: String) -> Bool {
        method == "POST" && Self.device(path) != nil
    }

    /// Apple's answer, as SPEC §15 lists them: the provider token checked (ES256 with the account's key, its `kid`
    /// and `iss`), `apns-topic` required, a body with `aps`, and the token's prefix (as for FCM: `notreg-` → 410
    /// Unregistered with a timestamp, `invalid-` → 400 BadDeviceToken, `unavail-N-` → 503 the first N times, …).
    /// Answered at once, counted in the stats as a v1-format request.
    public func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder) {
        guard let device = Self.device(request.path) else { return }
        let now = Clock.nowMillis()
        let id = request.header("apns-id") ?? "00000000-0000-4000-8000-000000000000"
        let (status, reason) = answer(request, device: device, simulator)
        simulator.withState { state in
            state.stats.tokensReceived += 1
            state.stats.outcomes[reason ?? "delivered", default: 0] += 1
            var entry = FCMSimulator.ReceivedRequest(
                at: now, tokens: [device], timeToLive: nil, dryRun: false, format: .v1, status: status,
                http: request.version)
            entry.to = device
            state.record(entry)
        }
        guard let reason else {
            return responder.respond(HTTPResponse(status: 200, headers: [("apns-id", id)]))
        }
        var body: [(key: String, value: JSON)] = [("reason", .string(reason))]
        if status == 410 { body.append(("timestamp", .int(now))) }
        responder.respond(.json(status, JSON.object(body).serialized(), headers: [("apns-id", id)]))
    }

    private func answer(_ request: HTTPRequest, device: String, _ simulator: FCMSimulator) -> (Int, String?) {
        let header = request.header("authorization") ?? ""
        guard header.hasPrefix("bearer "), isValidProviderToken(String(header.dropFirst("bearer ".count))) else {
            return (403, "InvalidProviderToken")
        }
        guard request.header("apns-topic").map({ !$0.isEmpty }) == true else { return (400, "MissingTopic") }
        guard (try? JSON.parse(request.body))?["aps"] != nil else { return (400, "PayloadEmpty") }
        switch simulator.errorCode(for: device) {
        case nil: return (200, nil)
        case "NotRegistered": return (410, "Unregistered")
        case "InvalidApnsCredential": return (403, "InvalidProviderToken")
        case "DeviceMessageRateExceeded", "TopicsMessageRateExceeded": return (429, "TooManyRequests")
        case "Unavailable", "InternalServerError": return (503, "ServiceUnavailable")
        default: return (400, "BadDeviceToken")
        }
    }

    /// ES256 with the account's key, its `kid` and its `iss`. The answer depends on the token alone (the account is
    /// fixed), so it is remembered; the memory is forgotten whole when it holds 64 tokens.
    private func isValidProviderToken(_ token: String) -> Bool {
        if let known = checkedProviderTokens.withLock({ $0[token] }) { return known }
        var valid = false
        if let account, let publicKey, let verified = try? JWT.verifyES256(token, with: publicKey) {
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

extension APNsSimulator {
    public static let help = SimulatorHelp(
        intro: """
            APNs (POST /3/device/TOKEN): over --tls-listen, HTTP/2, as Apple's is; herald serve --sandbox sends its
            ios app there.
            """,
        section: """
            APNs (POST /3/device/TOKEN, over --tls-listen as Apple's is over TLS): the provider token (authorization:
            bearer JWT) must be ES256 with the APNs key herald serve --sandbox gives the simulator it starts; any
            other is answered 403 {"reason": "InvalidProviderToken"}. Then apns-topic (400 MissingTopic) and a body
            with aps (400 PayloadEmpty) are checked, and the token prefixes above answer in Apple's words: notreg- 410
            Unregistered with a timestamp, apns- 403 InvalidProviderToken, ratelimit-N- 429 TooManyRequests,
            unavail-N- and internal-N- 503 ServiceUnavailable, invalid- and the rest of the errors 400
            BadDeviceToken; delivered is 200 with the request's apns-id. /stats lists each request with its
            protocol ("http": "HTTP/2" or "HTTP/1.1").
            """,
        stats: "APNs requests are listed as \"v1\" too.")
}
