import Classify
import Delivery
import Foundation
import Ingest
import OAuth
import Posix
import Queue
import Send
import Support
import WebPushCrypto

/// Browsers' push services directly (SPEC §16, RFC 8030/8291/8292): each delivery's token is a subscription
/// (`WebPushSubscription`), and each request a `POST` to its endpoint with the message encrypted to that
/// subscription's keys and a VAPID signature for the endpoint's origin.
///
/// The message is rendered once for all its deliveries (`WebPushNotification`); each request adds its own
/// encryption (a fresh key pair and salt every time, as RFC 8291 requires: the engine's render stage does it on every
/// core) and the origin's VAPID header. The VAPID key is the app's credentials (`VAPID`), signing a JWT once per
/// origin and reusing it for hours. `WebPushClassifier` reads the answers, so claim, retry and
/// reconciliation are the queue's as for FCM and APNs. The push services are many origins (Google's, Mozilla's,
/// Apple's, Microsoft's): the app's one HTTP/2 pool keeps connections per origin.
///
/// ```swift
/// let provider = try WebPushProvider(app: "web", vapid: VAPID(key: key, subject: "mailto:ops@example.com"))
/// ```
public final class WebPushProvider: Provider {
    /// One subscription per request.
    public let maxTargetsPerRequest = 1
    public let app: String
    let vapid: VAPID
    /// Where every request goes instead of its subscription's origin, path kept (`--sandbox`'s simulator, a
    /// stand-in); nil in production.
    let redirect: String?
    public let timeoutMillis: Int
    /// The CA certificates (PEM) push services are checked against instead of the default ones (`$SSL_CERT_FILE`,
    /// else the system's): the sandbox's, to trust the built-in simulator's throw-away certificate.
    public let caFile: String?
    /// Where its connections may go (SPEC §19): public addresses on port 443 unless the app allows private
    /// endpoints (the sandbox, tests).
    let addressPolicy: AddressPolicy
    /// Connections to all push services together at most (the app's `max_connections`): the origins are the
    /// browsers' to choose, so the pool keeps no more than this however many there are.
    public let connectionLimit: Int

    public static let defaultConnectionLimit = 256

    public init(
        app: String, vapid: VAPID, redirect: String? = nil, timeoutMillis: Int = 30_000, caFile: String? = nil,
        allowsPrivateEndpoints: Bool = false, connectionLimit: Int = WebPushProvider.defaultConnectionLimit
    ) {
        self.app = app
        addressPolicy = AddressPolicy(allowsPrivate: allowsPrivateEndpoints)
        self.vapid = vapid
        self.caFile = caFile
        self.connectionLimit = connectionLimit
        self.redirect = redirect.map { var base = $0; while base.hasSuffix("/") { base.removeLast() }; return base }
        self.timeoutMillis = timeoutMillis
    }

    // MARK: - Provider

    public var credentials: (any Credentials)? { vapid }

    /// `credential` is unused: each request's VAPID header is its origin's (`VAPID.authorization(origin:now:)`).
    public func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String?, now: Int64
    ) -> [PreparedRequest] {
        let rendered: WebPushNotification
        do {
            rendered = try WebPushNotification.render(message, now: now)
        } catch {
            return [refused(message, deliveries, reason: error.reason)]
        }
        return deliveries.map { delivery in
            guard let subscription = WebPushSubscription(token: delivery.token) else {
                // Registered through PUT /v1/tokens rather than as a subscription: no push service can take it.
                return refused(message, [delivery], reason: .invalidRegistration)
            }
            let origin = subscription.origin
            let body: [UInt8]
            let authorization: String
            do {
                body = try WebPushEncryption.encrypt(rendered.plaintext, to: subscription.keys)
                authorization = try vapid.authorization(origin: origin, now: now)
            } catch {
                return refused(message, [delivery], reason: .other("encryption failed: \(error)"))
            }
            let headers = [
                ("authorization", authorization), ("content-encoding", "aes128gcm"),
                ("content-type", "application/octet-stream"),
            ] + rendered.headers
            return PreparedRequest(
                app: app, message: message, deliveries: [delivery],
                outbound: OutboundRequest(
                    url: url(of: subscription), headers: headers, body: body, timeoutMillis: timeoutMillis,
                    keptResponseHeaders: WebPushClassifier.headersRead),
                kind: .tokens, format: .json, origin: origin)
        }
    }

    public func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification {
        guard case .response(let status, let headers, _, _) = result else {
            guard case .failure(let failure) = result else {
                return Classifier.transportFailure(reason: .other("no answer"), targetCount: 1)
            }
            return WebPushClassifier.classify(failure: DeliveryReason(failure))
        }
        return WebPushClassifier.classify(status: status, headers: headers, now: now)
    }

    /// HTTP/2 with up to 100 requests per connection where the push service offers it.
    public func maxConnections(concurrency: Int) -> Int {
        HTTPClientPool.connectionsNeeded(inFlight: concurrency, multiplexed: redirect?.hasPrefix("http:") != true)
    }

    public func makeTransport(concurrency: Int, name: String, liveness: HTTP2Liveness) -> any RequestTransport {
        http2Transport(
            concurrency: concurrency, name: name, liveness: liveness, caFile: caFile, totalConnections: connectionLimit,
            addressPolicy: addressPolicy)
    }

    // MARK: - Helpers

    /// The subscription's endpoint, or its path on `redirect`.
    func url(of subscription: WebPushSubscription) -> String {
        guard let redirect else { return subscription.endpoint }
        let afterScheme = subscription.endpoint.dropFirst("https://".count)
        return redirect + (afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/")
    }

    private func refused(
        _ message: ClaimedMessage, _ deliveries: [ClaimedDelivery], reason: DeliveryReason
    ) -> PreparedRequest {
        PreparedRequest(
            app: app, message: message, deliveries: deliveries, outbound: OutboundRequest(url: redirect ?? ""),
            kind: .tokens, format: .json, refusal: reason)
    }
}

/// The VAPID key as the engine drives it (`Credentials`): nothing to fetch, and its JWTs, one per push-service origin,
/// are signed as requests are rendered and kept for hours. A push service's refusal (401, 403) is that origin's
/// (SPEC §19), never the credential's: no answer is a `.requeue` for it to judge.
extension VAPID: Credentials {
    /// The public key (`k=`): always usable.
    public func current(now: Int64) -> String? { publicKeyText }

    public func renewalDue(now: Int64) -> Bool { false }

    public func renew(now: Int64) {}

    public func obtain(now: Int64, completion: @escaping @Sendable (ProviderReadiness) -> Void) {
        completion(.ready)
    }

    public func refused(_ request: PreparedRequest) -> CredentialRefusal { .stale }

    public func accepted(_ request: PreparedRequest) -> Bool { false }
}
