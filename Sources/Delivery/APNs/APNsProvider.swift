import Classify
import OAuth
import Queue
import Send
import Support

/// Apple's Push Notification service directly (SPEC §15): `POST {endpoint}/3/device/{token}` over HTTP/2, one
/// device per request, authenticated with the team's ES256 provider token (`APNsProviderToken`), or with the app's
/// certificate as the TLS client certificate of its connections (SPEC §22; then no `authorization` header).
///
/// The message is rendered once for all its deliveries (`APNsNotification`); each request adds its device's path
/// and its delivery's `apns-id`, the same on every attempt. `APNsClassifier` reads the answers, so claim, retry and
/// reconciliation are the queue's as for FCM.
///
/// ```swift
/// let provider = APNsProvider(app: "ios", key: try P256PrivateKey(pem: p8), keyID: "ABC123DEFG",
///                             teamID: "DEF123GHIJ", topic: "com.example.app", endpoint: APNsProvider.production)
/// ```
public final class APNsProvider: Provider {
    public static let production = "https://api.push.apple.com"
    public static let sandbox = "https://api.sandbox.push.apple.com"

    /// One device per request: HTTP/2 multiplexing carries the fan-out.
    public let maxTargetsPerRequest = 1
    public let app: String
    public let topic: String
    /// `{endpoint}/3/device/`.
    let deviceURL: String
    /// nil with a certificate.
    let tokens: APNsProviderToken?
    let clientIdentity: TLSClientIdentity?
    public let timeoutMillis: Int
    /// The CA certificates (PEM) the endpoint is checked against instead of the default ones (`$SSL_CERT_FILE`, else
    /// the system's): the sandbox's, to trust the built-in simulator's throw-away certificate.
    public let caFile: String?

    public convenience init(
        app: String, key: P256PrivateKey, keyID: String, teamID: String, topic: String, endpoint: String,
        timeoutMillis: Int = 30_000, caFile: String? = nil
    ) {
        self.init(
            app: app, tokens: APNsProviderToken(key: key, keyID: keyID, teamID: teamID), clientIdentity: nil,
            topic: topic, endpoint: endpoint, timeoutMillis: timeoutMillis, caFile: caFile)
    }

    /// Certificate-based authentication: `certificate` (the app's APNs certificate and its key) is the TLS client
    /// certificate of every connection.
    public convenience init(
        app: String, certificate: TLSClientIdentity, topic: String, endpoint: String, timeoutMillis: Int = 30_000,
        caFile: String? = nil
    ) {
        self.init(
            app: app, tokens: nil, clientIdentity: certificate, topic: topic, endpoint: endpoint,
            timeoutMillis: timeoutMillis, caFile: caFile)
    }

    private init(
        app: String, tokens: APNsProviderToken?, clientIdentity: TLSClientIdentity?, topic: String, endpoint: String,
        timeoutMillis: Int, caFile: String?
    ) {
        self.app = app
        self.caFile = caFile
        self.topic = topic
        var base = endpoint
        while base.hasSuffix("/") { base.removeLast() }
        deviceURL = base + "/3/device/"
        self.tokens = tokens
        self.clientIdentity = clientIdentity
        self.timeoutMillis = timeoutMillis
    }

    // MARK: - Provider

    public var credentials: (any Credentials)? { tokens }

    public func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String?, now: Int64
    ) -> [PreparedRequest] {
        let rendered: APNsNotification
        do {
            rendered = try APNsNotification.render(message, topic: topic, now: now)
        } catch {
            return [PreparedRequest(
                app: app, message: message, deliveries: deliveries, outbound: OutboundRequest(url: deviceURL),
                kind: .tokens, format: .json, refusal: error.reason)]
        }
        // Without a credential the engine obtains one before it sends, and releases these requests unsent. A
        // certificate authenticates the connection instead.
        let authorization = tokens == nil ? [] : [("authorization", "bearer " + (credential ?? ""))]
        return deliveries.map { delivery in
            let id = APNsNotification.apnsID(delivery: delivery.id)
            let headers = authorization + [("apns-id", id)] + rendered.headers
            return PreparedRequest(
                app: app, message: message, deliveries: [delivery],
                outbound: OutboundRequest(
                    url: deviceURL + URLPathSegment.encode(delivery.token), headers: headers, body: rendered.body,
                    timeoutMillis: timeoutMillis, keptResponseHeaders: APNsClassifier.headersRead),
                kind: .tokens, format: .json)
        }
    }

    /// `ExpiredProviderToken` is `.requeue`: whether the token is renewed or the app pauses is `tokens`' to say.
    public func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification {
        guard case .response(let status, let headers, let body, _) = result else {
            guard case .failure(let failure) = result else {
                return Classifier.transportFailure(reason: .other("no answer"), targetCount: 1)
            }
            return Classifier.transportFailure(reason: DeliveryReason(failure), targetCount: 1)
        }
        return APNsClassifier.classify(
            status: status, headers: headers, body: body, now: now, mayRenewCredentials: tokens != nil)
    }

    /// Over HTTPS, HTTP/2 with up to 100 requests per connection (fewer when Apple's SETTINGS say so).
    public func maxConnections(concurrency: Int) -> Int {
        HTTPClientPool.connectionsNeeded(inFlight: concurrency, multiplexed: deviceURL.hasPrefix("https:"))
    }

    public func makeTransport(concurrency: Int, name: String, liveness: HTTP2Liveness) -> any RequestTransport {
        http2Transport(
            concurrency: concurrency, name: name, liveness: liveness, caFile: caFile, clientIdentity: clientIdentity)
    }
}
