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
public enum WebPushClassifier {
    /// The response headers `classify` reads, lowercase.
    public static let headersRead = ["location", "retry-after"]
    /// A `Location` longer than this is not kept as the provider's message id.
    static let maximumMessageIDBytes = 255

    public static func classify(status: Int, headers: [(name: String, value: String)], now: Int64) -> Classification {
        let retryAfterUntil = RetryAfter.until(headers: headers, now: now)
        let outcome = outcome(status: status, headers: headers)
        let retrying = if case .retry = outcome { true } else { false }
        return Classification(
            outcomes: [outcome], retryAfterUntil: retryAfterUntil,
            closesGate: retrying && (status >= 500 || status == 429 || retryAfterUntil != nil))
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
            // The push service refused the VAPID signature or the key it names: every push would be refused.
            return .pauseApp(reason: .httpStatus(status))
        case 408, 425, 429:
            return .retry(reason: .httpStatus(status))
        case 400...499:
            // 400 (a malformed request), 413 (the encrypted payload too large), and any other refusal of the
            // message itself: no subscription can take it.
            return .deadMessage(reason: .httpStatus(status))
        default:
            return .retry(reason: .httpStatus(status))
        }
    }
}
