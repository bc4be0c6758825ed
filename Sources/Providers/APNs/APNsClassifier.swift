import Classify
import Support

/// Turns one APNs answer (one device token per request) into its outcome (SPEC §15). Pure: no I/O, no clock, no
/// logging; never traps on whatever the network returns.
///
/// ```swift
/// let classification = APNsClassifier.classify(
///     status: 410, headers: [], body: Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8),
///     now: now, mayRenewCredentials: true)
/// // classification.outcomes == [.unregistered(reason: .apns(.unregistered), since: 1700000000000)]
/// ```
///
/// The reason is Apple's `reason` when it is one Herald knows or looks like an identifier, else `HTTP <status>`.
/// The reason decides the outcome; the status decides only for reasons the table does not know.
public enum APNsClassifier {
    /// The response headers `classify` reads, lowercase.
    public static let headersRead = ["apns-id", "retry-after"]

    /// - Parameter mayRenewCredentials: the provider token may still be renewed once for this request: an
    ///   `ExpiredProviderToken` then releases the delivery for a new JWT instead of pausing the app.
    public static func classify(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], now: Int64, mayRenewCredentials: Bool
    ) -> Classification {
        let retryAfterUntil = RetryAfter.until(headers: headers, now: now)
        let outcome = outcome(status: status, headers: headers, body: body, mayRenewCredentials: mayRenewCredentials)
        // One device asked too often is that device's affair: its retry goes on the slow lane, the gate stays open.
        let deviceRate = if case .retrySlow = outcome { true } else { false }
        return Classification(
            outcomes: [outcome], retryAfterUntil: deviceRate ? nil : retryAfterUntil,
            closesGate: status >= 500 || (retryAfterUntil != nil && !deviceRate),
            credentialRenewedTooOften: outcome == .retry(reason: .apns(.tooManyProviderTokenUpdates)))
    }

    // MARK: - The table

    static func outcome(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], mayRenewCredentials: Bool
    ) -> Outcome {
        if status == 200 {
            let id = headers.first { $0.name == "apns-id" }?.value
            return .delivered(fcmMessageID: id.flatMap { $0.utf8.count <= 64 ? $0 : nil }, canonicalToken: nil)
        }
        let reply = try? JSON.parse(body)
        let text = reply?["reason"]?.stringValue
        let reason = text.map { Outcome.isIdentifier($0) ? DeliveryReason(stored: $0) : .unknownError }
            ?? .httpStatus(status)
        switch text.flatMap(APNsCode.init(rawValue:)) {
        case .unregistered?, .expiredToken?:
            // Apple's timestamp: milliseconds since the epoch when the token stopped being valid.
            let since = reply?["timestamp"]?.int64Value
            return .unregistered(reason: reason, since: since.flatMap { $0 > 0 ? $0 : nil })
        case .badDeviceToken?, .deviceTokenNotForTopic?:
            return .invalidToken(reason: reason)
        case .missingDeviceToken?, .badCollapseID?, .badExpirationDate?, .badMessageID?, .badPriority?, .badPushType?,
            .duplicateHeaders?, .payloadEmpty?, .payloadTooLarge?, .badPath?, .methodNotAllowed?:
            return .deadMessage(reason: reason)
        case .expiredProviderToken?:
            return mayRenewCredentials ? .requeue(reason: reason) : .pauseApp(reason: reason)
        case .invalidProviderToken?, .missingProviderToken?, .badCertificate?, .badCertificateEnvironment?, .forbidden?,
            .badTopic?, .topicDisallowed?, .missingTopic?:
            return .pauseApp(reason: reason)
        case .tooManyRequests?:
            return .retrySlow(reason: reason)
        case .tooManyProviderTokenUpdates?, .idleTimeout?, .serviceUnavailable?, .shutdown?:
            return .retry(reason: reason)
        case nil:
            // Apple's `InternalServerError` is FCM legacy's text, a reason of Herald's own.
            if reason == .internalServerError { return .retry(reason: reason) }
        }
        switch status {
        case 400, 404, 405, 413: return .deadMessage(reason: reason)
        case 403: return .pauseApp(reason: reason)
        case 410: return .unregistered(reason: reason, since: nil)
        case 429: return .retrySlow(reason: reason)
        default: return .retry(reason: reason)
        }
    }
}
