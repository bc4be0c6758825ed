import Classify
import Delivery
import OAuth
import Queue
import Send
import Support
import Synchronization

/// FCM HTTP v1: `POST {endpoint}/v1/projects/{project}/messages:send` with an OAuth2 access token, one request per
/// token, topic or condition (v1 has no multicast; HTTP/2 multiplexing carries the fan-out).
///
/// A message stored in v1 shape goes out as it came (`V1Template`: the target and remaining TTL filled in); a
/// legacy-shaped one is mapped by `V1Message`. `V1Classifier` reads the answers, so the engine's claim, retry and
/// reconciliation are the same as for `LegacyProvider`.
///
/// ```swift
/// let provider = V1Provider(app: "default", account: try ServiceAccount(contentsOf: path), projectID: "my-project",
///                           endpoint: "https://fcm.googleapis.com", tokenURI: "https://oauth2.googleapis.com/token",
///                           tokenPool: HTTPClientPool(maxConnectionsPerHost: 2, name: "oauth"))
/// ```
public final class V1Provider: Provider {
    /// v1 has no multicast: HTTP/2 multiplexing carries the fan-out.
    public let maxTargetsPerRequest = 1
    public static let defaultEndpoint = "https://fcm.googleapis.com"
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    public let app: String
    /// `{endpoint}/v1/projects/{project}/messages:send`.
    public let sendURL: String
    public let timeoutMillis: Int
    let tokens: AccessTokenCache
    /// The request headers for the current access token, built once per token rather than once per message: every
    /// request of the hour shares one array (and the pool's transfers one curl header list).
    private let cachedHeaders = Mutex<(token: String, headers: [(name: String, value: String)])?>(nil)
    /// The last message's template and what it was rendered from (see `template(for:now:)`).
    private let lastTemplate = Mutex<(key: TemplateKey, template: V1Template)?>(nil)

    public init(app: String, account: ServiceAccount, projectID: String, endpoint: String, tokenURI: String,
                tokenPool: HTTPClientPool, timeoutMillis: Int = 30_000) {
        self.app = app
        var base = endpoint
        while base.hasSuffix("/") { base.removeLast() }
        sendURL = base + "/v1/projects/" + URLPathSegment.encode(projectID) + "/messages:send"
        self.timeoutMillis = timeoutMillis
        tokens = AccessTokenCache(app: app, account: account, tokenURI: tokenURI, pool: tokenPool)
    }

    // MARK: - Provider

    public var credentials: (any Credentials)? { tokens }

    /// `credential`: the access token. Without one the scheduler obtains one before it sends, and releases these
    /// requests unsent.
    public func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String?, now: Int64
    ) -> [PreparedRequest] {
        let headers = headers(token: credential ?? "")
        let kind = message.targetKind
        // The message is rendered once for all its deliveries here; each body is then bytes spliced. A v1-shaped
        // message keeps its own TTL fields, counted down; a legacy-shaped one is mapped with the TTL left at `now`.
        let template = template(for: message, now: now)
        let elapsed = message.format == .v1 && message.ttlSeconds > 0
            ? message.ttlSeconds - message.remainingTTL(now: now) : 0
        return deliveries.map { delivery in
            let body = template.body(target: delivery.token, kind: kind, elapsedSeconds: elapsed)
            return PreparedRequest(
                app: app, message: message, deliveries: [delivery],
                outbound: OutboundRequest(
                    url: sendURL, headers: headers, body: body, timeoutMillis: timeoutMillis,
                    keptResponseHeaders: Classifier.headersRead),
                kind: kind, format: .json)
        }
    }

    /// A refused access token (401 `UNAUTHENTICATED`) is `.requeue`.
    public func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification {
        switch result {
        case .response(let status, let headers, let body, _):
            V1Classifier.classify(status: status, headers: headers, body: body, now: now, mayRenewCredentials: true)
        case .failure(let failure):
            V1Classifier.transportFailure(reason: DeliveryReason(failure))
        }
    }

    /// Over HTTPS, HTTP/2 with up to 100 requests per connection; a cleartext endpoint (the sandbox's simulator)
    /// speaks HTTP/1.1 and needs a connection per request.
    public func maxConnections(concurrency: Int) -> Int {
        HTTPClientPool.connectionsNeeded(inFlight: concurrency, multiplexed: sendURL.hasPrefix("https:"))
    }

    /// Over HTTPS, Herald's own HTTP/2 client (libcurl 7.88 costs several times the CPU per request at FCM's rate,
    /// see `HTTP2ClientPool`); a cleartext endpoint gets libcurl's HTTP/1.1.
    public func makeTransport(concurrency: Int, name: String, liveness: HTTP2Liveness) -> any RequestTransport {
        guard sendURL.hasPrefix("https:") else {
            return HTTPClientPool(maxConnectionsPerHost: maxConnections(concurrency: concurrency), name: name)
        }
        return http2Transport(concurrency: concurrency, name: name, liveness: liveness)
    }

    // MARK: - Helpers

    /// What a rendered template depends on besides the payload: all of it for a v1-shaped message is in the
    /// payload; a legacy-shaped one also bakes in the remaining TTL and the APNs expiration, both in whole seconds.
    private struct TemplateKey: Equatable {
        var payload: String
        var format: MessageFormat
        var dryRun: Bool
        var tokenField: TokenField
        var remainingSeconds: Int
        var nowSecond: Int64
    }

    /// The message's template, or the last one rendered when this message would render the same: one message per
    /// token in a row with the same payload (a backend sending each token its own copy, as FCM v1's drop-in
    /// endpoint gets it from the SDKs) is parsed and rendered once, not once per token.
    private func template(for message: ClaimedMessage, now: Int64) -> V1Template {
        let key = TemplateKey(
            payload: message.payload, format: message.format, dryRun: message.dryRun, tokenField: message.tokenField,
            remainingSeconds: message.format == .v1 ? 0 : message.remainingTTL(now: now),
            nowSecond: message.format == .v1 ? 0 : now / 1000)
        if let hit = lastTemplate.withLock({ $0.flatMap { $0.key == key ? $0.template : nil } }) { return hit }
        let template = message.format == .v1 ? V1Template(message) : V1Message.template(for: message, now: now)
        lastTemplate.withLock { $0 = (key, template) }
        return template
    }

    private func headers(token: String) -> [(name: String, value: String)] {
        cachedHeaders.withLock { cached in
            if let cached, cached.token == token { return cached.headers }
            let headers = [
                (name: "Content-Type", value: "application/json"), (name: "Authorization", value: "Bearer " + token),
            ]
            cached = (token, headers)
            return headers
        }
    }
}
