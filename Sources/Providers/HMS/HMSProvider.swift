import Classify
import Delivery
import Queue
import Send
import Support

/// HMS Push Kit (SPEC §21): `POST {endpoint}/v1/{app_id}/messages:send` with an OAuth 2.0 client-credentials
/// access token, up to 1000 device tokens a request, as FCM's legacy multicast. Huawei devices without Google's
/// services.
///
/// The message is rendered once for all its deliveries (`HMSMessage`); each request adds its run of tokens.
/// `HMSClassifier` reads the answers per token, so claim, retry and reconciliation are the queue's as for FCM. The
/// access token is an `AccessTokenCache`, as FCM v1's, with Huawei's grant.
///
/// ```swift
/// var settings = try HMSSettings(entry)
/// try settings.load(app: "huawei")
/// let provider = HMSProvider(app: "huawei", settings: settings,
///                            tokenPool: HTTPClientPool(maxConnectionsPerHost: 2, name: "oauth"))
/// ```
public final class HMSProvider: Provider {
    public let maxTargetsPerRequest = HMSMessage.maximumTokensPerRequest
    public let app: String
    /// `{endpoint}/v1/{app_id}/messages:send`.
    public let sendURL: String
    public let timeoutMillis: Int
    let tokens: AccessTokenCache

    /// A partial success names its refused tokens: up to 1000 of them (~200 bytes each).
    public var maxResponseBytes: Int { 1 << 20 }

    /// `settings.clientSecret` must be loaded.
    public init(app: String, settings: HMSSettings, tokenPool: HTTPClientPool, timeoutMillis: Int = 30_000) {
        self.app = app
        var base = settings.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        // `app_id` is digits (`HMSSettings`): nothing to encode.
        sendURL = base + "/v1/" + settings.appID + "/messages:send"
        self.timeoutMillis = timeoutMillis
        let grant = HMSSettings.grant(clientID: settings.clientID, clientSecret: settings.clientSecret ?? "")
        tokens = AccessTokenCache(app: app, provider: "hms", tokenURI: settings.tokenURI, pool: tokenPool) { grant }
    }

    // MARK: - Provider

    public var credentials: (any Credentials)? { tokens }

    /// Tokens in runs of up to 1000 a request; a topic or condition a request each. Without a credential the engine
    /// obtains one before it sends, and releases these requests unsent.
    public func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String?, now: Int64
    ) -> [PreparedRequest] {
        let rendered = HMSMessage(message, now: now)
        let kind = message.targetKind
        guard !rendered.isTooBig else {
            return [PreparedRequest(
                app: app, message: message, deliveries: deliveries, outbound: OutboundRequest(url: sendURL),
                kind: kind, format: .json, refusal: HMSCode.messageTooBig.reason)]
        }
        let headers = [
            (name: "Content-Type", value: "application/json; charset=UTF-8"),
            (name: "Authorization", value: "Bearer " + (credential ?? "")),
        ]
        return requestRuns(deliveries, kind: kind).map { run in
            let body = kind == .tokens
                ? rendered.body(tokens: run.map(\.token)) : rendered.body(kind, target: run[0].token)
            return PreparedRequest(
                app: app, message: message, deliveries: run,
                outbound: OutboundRequest(
                    url: sendURL, headers: headers, body: body, timeoutMillis: timeoutMillis,
                    keptResponseHeaders: HMSClassifier.headersRead),
                kind: kind, format: .json)
        }
    }

    /// A refused or expired access token (80200001, 80200003) is `.requeue`: whether it is renewed or the app
    /// pauses is `tokens`' to say.
    public func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification {
        switch result {
        case .response(let status, let headers, let body, _):
            HMSClassifier.classify(
                status: status, headers: headers, body: body, targets: request.deliveries.map(\.token), now: now)
        case .failure(let failure):
            Classifier.transportFailure(reason: DeliveryReason(failure), targetCount: request.deliveries.count)
        }
    }

    /// Over HTTPS, HTTP/2 where Huawei offers it (else HTTP/1.1, a connection per request); a cleartext endpoint
    /// (the sandbox's simulator) speaks HTTP/1.1.
    public func maxConnections(concurrency: Int) -> Int {
        HTTPClientPool.connectionsNeeded(inFlight: concurrency, multiplexed: sendURL.hasPrefix("https:"))
    }

    public func makeTransport(concurrency: Int, name: String, liveness: HTTP2Liveness) -> any RequestTransport {
        guard sendURL.hasPrefix("https:") else {
            return HTTPClientPool(
                maxConnectionsPerHost: maxConnections(concurrency: concurrency), maxResponseBytes: maxResponseBytes,
                name: name)
        }
        return http2Transport(concurrency: concurrency, name: name, liveness: liveness)
    }
}
