import Classify
import Support

/// Turns one push service's answer (one subscription per request) into its outcome (SPEC §16). Pure: no I/O, no
/// clock, no logging; never traps on whatever the network returns.
///
/// ```swift
/// let classification = WebPushClassifier.classify(status: 410, headers: [], now: now)
/// // classification.outcomes == [.unregistered(reason: .httpStatus(410), since: nil)]
/// ```
///
/// Push services (RFC 8030) answer with a status and little else: the status decides, the reason is `HTTP <status>`.
/// Every answer is one origin's, which any browser can name (SPEC §19): no outcome here ends other deliveries of the
/// message or pauses the app, and the gate it closes is the origin's (the scheduler's fault domain for the request).
public enum WebPushClassifier {
    /// The response headers `classify` reads, lowercase.
    public static let headersRead = ["location", "retry-after"]
    /// A `Location` longer than this is not kept as the provider's message id.
    static let maximumMessageIDBytes = 255
    /// The longest `Retry-After` an origin is obeyed for: it closes only that origin's gate, but a day-long one from a
    /// hostile endpoint would still hold its deliveries for a day.
    static let maximumRetryAfterMillis: Int64 = 3_600_000

    public static func classify(status: Int, headers: [(name: String, value: String)], now: Int64) -> Classification {
        let retryAfterUntil = RetryAfter.until(headers: headers, now: now).map { min($0, now + maximumRetryAfterMillis) }
        let outcome = outcome(status: status, headers: headers)
        let closesGate = switch outcome {
        case .retry: status >= 500 || status == 429 || retryAfterUntil != nil
        case .senderRefused: true
        default: false
        }
        return Classification(outcomes: [outcome], retryAfterUntil: retryAfterUntil, closesGate: closesGate)
    }

    /// A request that got no answer, by the reason its failure is stored as: `ForbiddenAddress` (SPEC §19: the
    /// endpoint's host is an address the app may not send to, and nothing was connected to) ends that delivery;
    /// anything else is retried, the gate closing.
    public static func classify(failure reason: DeliveryReason) -> Classification {
        guard reason == .forbiddenAddress else { return Classifier.transportFailure(reason: reason, targetCount: 1) }
        return Classification(outcomes: [.deadToken(reason: reason)], retryAfterUntil: nil, closesGate: false)
    }

    // MARK: - The table

    static func outcome(status: Int, headers: [(name: String, value: String)]) -> Outcome {
        switch status {
        case 200...299:
            // 201 Created with the push message's resource in `Location` (RFC 8030 §5).
            let location = headers.first { $0.name == "location" }?.value
            return .delivered(
                fcmMessageID: location.flatMap { $0.utf8.count <= maximumMessageIDBytes ? $0 : nil },
                canonicalToken: nil)
        case 404, 410:
            // The subscription expired or was unsubscribed: gone for good.
            return .unregistered(reason: .httpStatus(status), since: nil)
        case 401, 403:
            // The push service refused the VAPID signature, or the key the subscription was made with: this origin
            // may refuse every push of the app, or only this subscription. Retried later; the origin decides the rest.
            return .senderRefused(reason: .httpStatus(status))
        case 408, 425, 429:
            return .retry(reason: .httpStatus(status))
        case 400...499:
            // 400 (a malformed request), 413 (the encrypted payload too large), and any other refusal: this push
            // service's word on this delivery. Another push service (or FCM, APNs) may well take the same message.
            return .deadToken(reason: .httpStatus(status))
        default:
            return .retry(reason: .httpStatus(status))
        }
    }
}
