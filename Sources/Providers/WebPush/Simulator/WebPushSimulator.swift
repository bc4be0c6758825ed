import FCMSimulator
import Foundation
import HTTP
import Ingest
import OAuth
import Support
import Synchronization
import WebPushCrypto

/// Web Push's side of the simulator (SPEC §16): a push service (`POST /push/{id}`) that checks VAPID and decrypts
/// what arrives for the subscriptions it made (`POST /webpush/subscriptions`, a browser's side), answering by the
/// endpoint's last segment with the shared per-token outcomes as statuses.
///
/// ```swift
/// let simulator = FCMSimulator(sides: [WebPushSimulator()])
/// ```
public final class WebPushSimulator: SimulatorSide {
    static let prefix = "/push/"
    static let subscriptionsPath = "/webpush/subscriptions"

    /// The browsers' keys of the subscriptions it made, by the endpoint path's last segment, so what arrives for them
    /// is decrypted (kept across a reset).
    private let subscribers = Mutex<[String: WebPushSubscriber]>([:])

    public init() {}

    public convenience init(flags: [String: String]) {
        self.init()
    }

    /// `{id}` of `/push/{id}`, or nil for any other path.
    static func id(_ path: String) -> String? {
        guard path.hasPrefix(prefix), path.utf8.count > prefix.utf8.count else { return nil }
        let id = path.dropFirst(prefix.count)
        return id.contains("/") ? nil : String(id)
    }

    // MARK: - SimulatorSide

    public let routes = ["POST " + prefix + "{id}", "POST " + subscriptionsPath]

    public func handles(method: String, path: String) -> Bool {
        method == "POST" && (path == Self.subscriptionsPath || Self.id(path) != nil)
    }

    public func bodyLimit(path: String) -> Int {
        path == Self.subscriptionsPath ? FCMSimulator.controlBodyLimit : FCMSimulator.sendBodyLimit
    }

    public func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder) {
        guard let id = Self.id(request.path) else { return makeSubscription(request, responder) }
        send(request, id: id, simulator, responder)
    }

    // MARK: - POST /webpush/subscriptions

    /// A browser's side of a subscription, made here so that what Herald sends to it can be decrypted:
    /// `{"name"?: "notreg-1", "origin"?: "https://127.0.0.1:8443"}` → `PushSubscription.toJSON()` plus the
    /// browser's private key (`private_key`, PKCS#8 PEM: a test's independent decryption needs it). The endpoint
    /// is `{origin}/push/{name}-{random}`; the name's prefix sets the push service's answer as for tokens.
    private func makeSubscription(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        let body = request.body.isEmpty ? JSON.object([]) : (try? JSON.parse(request.body))
        guard let body, body.objectValue != nil else {
            return responder.respond(.text(400, "the body must be a JSON object: {\"name\"?, \"origin\"?}\n"))
        }
        let name = body["name"]?.stringValue ?? "sub"
        let origin = body["origin"]?.stringValue ?? "https://push.simulator.invalid"
        guard name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }),
              origin.hasPrefix("https://"), !origin.dropFirst(8).contains("/")
        else {
            return responder.respond(.text(400, "name must be a path segment and origin https://host[:port]\n"))
        }
        let subscriber: WebPushSubscriber
        do {
            subscriber = try WebPushSubscriber.generate()
        } catch {
            return responder.respond(.text(500, "cannot make a key pair: \(error)\n"))
        }
        let id = name + "-" + String(UInt64.random(in: .min ... .max), radix: 36)
        subscribers.withLock { $0[id] = subscriber }
        let json = JSON.object([
            ("endpoint", .string(origin + Self.prefix + id)),
            ("expirationTime", .null),
            ("keys", .object([
                ("p256dh", .string(subscriber.keys.p256dhText)), ("auth", .string(subscriber.keys.authText)),
            ])),
            ("private_key", .string(subscriber.privateKey.pkcs8PEM())),
        ])
        responder.respond(.json(201, json.serialized()))
    }

    // MARK: - POST /push/{id}

    /// A push service's answer (RFC 8030/8291/8292): the VAPID header checked (an ES256 JWT signed by the key in
    /// `k`, an https audience, an expiry within 24 hours, a subject), `TTL` required, `aes128gcm` content of one
    /// record; then the id's prefix decides (`notreg-` → 410, `invalid-` → 404, `ratelimit-` → 429,
    /// `unavail-N-` → 503 the first N times, …) and anything else is `201 Created` with a `Location`. A
    /// subscription the simulator made is decrypted, and a body it cannot decrypt is `400`.
    private func send(_ request: HTTPRequest, id: String, _ simulator: FCMSimulator, _ responder: any HTTPResponder) {
        let now = Clock.nowMillis()
        let (status, problem, decrypted) = answer(request, id: id, simulator, now: now)
        var received: [(key: String, value: JSON)] = [
            ("ttl", request.header("ttl").map(JSON.string) ?? .null),
            ("urgency", request.header("urgency").map(JSON.string) ?? .null),
            ("topic", request.header("topic").map(JSON.string) ?? .null),
            ("body", .string(Base64URL.encode(request.body))),
        ]
        if let decrypted {
            let text = JSON.string(String(decoding: decrypted, as: UTF8.self))
            received.append(("decrypted", (try? JSON.parse(decrypted)) ?? text))
        }
        let location: String? = simulator.withState { state in
            state.stats.tokensReceived += 1
            state.stats.outcomes[status == 201 ? "delivered" : "HTTP \(status)", default: 0] += 1
            var entry = FCMSimulator.ReceivedRequest(
                at: now, tokens: [id], timeToLive: nil, dryRun: false, format: .v1, status: status,
                http: request.version)
            entry.to = id
            entry.message = .object(received)
            state.record(entry)
            guard status == 201 else { return nil }
            state.nextID += 1
            return "/message/\(state.nextID)"
        }
        switch status {
        case 201:
            responder.respond(HTTPResponse(status: 201, headers: [("Location", location ?? "/message/0")]))
        case 429, 503:
            responder.respond(.text(status, (problem ?? "") + "\n", headers: [("Retry-After", "1")]))
        default:
            responder.respond(.text(status, (problem ?? "") + "\n"))
        }
    }

    private func answer(
        _ request: HTTPRequest, id: String, _ simulator: FCMSimulator, now: Int64
    ) -> (Int, String?, [UInt8]?) {
        if let refusal = Self.vapidProblem(request.header("authorization"), now: now) { return (403, refusal, nil) }
        guard let ttl = request.header("ttl"), Int(ttl).map({ $0 >= 0 }) == true else {
            return (400, "TTL header missing or not a number of seconds", nil)
        }
        guard request.header("content-encoding")?.lowercased() == "aes128gcm" else {
            return (400, "Content-Encoding must be aes128gcm", nil)
        }
        guard request.body.count <= 4096 else { return (413, "payload over 4096 bytes", nil) }
        var decrypted: [UInt8]?
        if let subscriber = subscribers.withLock({ $0[id] }) {
            do {
                decrypted = try WebPushEncryption.decrypt(
                    request.body, privateKey: subscriber.privateKey, auth: subscriber.keys.auth)
            } catch {
                return (400, "cannot decrypt: \(error)", nil)
            }
        }
        switch simulator.errorCode(for: id) {
        case nil: return (201, nil, decrypted)
        case "NotRegistered": return (410, "push subscription has unsubscribed or expired", decrypted)
        case "InvalidApnsCredential": return (403, "VAPID refused", decrypted)
        case "DeviceMessageRateExceeded", "TopicsMessageRateExceeded": return (429, "too many requests", decrypted)
        case "Unavailable", "InternalServerError": return (503, "service unavailable", decrypted)
        default: return (404, "no such subscription", decrypted)
        }
    }

    /// Nil when `header` is `vapid t=<jwt>, k=<key>` with a JWT that key signed, claims in order; else why not.
    static func vapidProblem(_ header: String?, now: Int64) -> String? {
        guard let header, header.lowercased().hasPrefix("vapid ") else {
            return "Authorization must be vapid t=…, k=…"
        }
        var parameters: [String: String] = [:]
        for part in header.dropFirst("vapid ".count).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            parameters[pair[0].trimmingCharacters(in: .whitespaces)] = pair[1].trimmingCharacters(in: .whitespaces)
        }
        guard let token = parameters["t"], let key = parameters["k"].flatMap({ Base64URL.decode($0) }),
              let publicKey = try? P256PublicKey(uncompressedPoint: key)
        else { return "vapid needs t=<JWT> and k=<P-256 public key>" }
        guard let jwt = try? JWT.verifyES256(token, with: publicKey) else { return "VAPID signature invalid" }
        guard let audience = jwt.claims["aud"]?.stringValue, audience.hasPrefix("https://") else {
            return "VAPID aud must be the push service's https origin"
        }
        guard let expiry = jwt.claims["exp"]?.int64Value, expiry * 1000 > now, expiry * 1000 <= now + 86_400_000
        else { return "VAPID exp must be in the future and within 24 hours" }
        guard let subject = jwt.claims["sub"]?.stringValue, subject.hasPrefix("mailto:") || subject.hasPrefix("https:")
        else { return "VAPID sub must be mailto: or https:" }
        return nil
    }
}

extension WebPushSimulator {
    public static let help = SimulatorHelp(
        intro: """
            Web Push (POST /push/ID, POST /webpush/subscriptions): a push service as browsers' are, over either
            listener.
            """,
        section: """
            Web Push (POST /push/ID, a push service as browsers' are): the VAPID header (vapid t=JWT, k=KEY: ES256
            signed by KEY, an https aud, exp within 24 hours, a sub) or 403; a TTL header and Content-Encoding:
            aes128gcm or 400; a body of 4096 bytes at most or 413. Then ID's prefix answers as for tokens: notreg-
            410, invalid- and the other errors 404, apns- 403, ratelimit-N- 429, unavail-N- and internal-N- 503 (with
            Retry-After: 1); anything else 201 with a Location. POST /webpush/subscriptions {"name": "phone",
            "origin": "https://HOST:PORT"} makes a subscription as a browser would (PushSubscription.toJSON() plus
            its private_key); what arrives for it is decrypted (a body that does not decrypt is 400), and /stats shows
            each push's ttl, urgency, topic, body and decrypted payload under "message".
            """,
        stats: "Web Push requests are listed as \"v1\" too.")
}
