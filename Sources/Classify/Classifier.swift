import Queue
import Support

/// Turns one FCM legacy answer into one `Outcome` per target sent (SPEC §6). Pure: no I/O, no clock, no logging;
/// never traps on whatever the network returns.
///
/// ```swift
/// let classification = Classifier.classify(status: 200, headers: [], body: Array(reply.utf8), targetCount: 6,
///                                          kind: .tokens, format: .json, now: Clock.nowMillis())
/// // classification.outcomes[4] == .delivered(fcmMessageID: "1:2342", canonicalToken: "32")
/// ```
public enum Classifier {
    /// The response headers `classify` (and `V1Classifier.classify`) read, lowercase: a request may leave the
    /// others out of its response (`OutboundRequest.keptResponseHeaders`).
    public static let headersRead = ["retry-after"]

    public static func classify(
        status: Int, headers: [(name: String, value: String)], body: [UInt8],
        targetCount: Int, kind: TargetKind, format: RequestFormat, now: Int64
    ) -> Classification {
        let targetCount = max(0, targetCount)
        let retryAfterUntil = RetryAfter.until(headers: headers, now: now)
        return Classification(
            outcomes: outcomes(status: status, body: body, targetCount: targetCount, kind: kind, format: format),
            retryAfterUntil: retryAfterUntil,
            closesGate: status >= 500 || retryAfterUntil != nil
        )
    }

    /// Timeout, reset, DNS or connect failure: every target retries, and the gate closes like a 5xx. `reason` is
    /// the sender's description of the failure (`DeliveryReason(stored: failure.description)`), stored as it is.
    public static func transportFailure(reason: DeliveryReason, targetCount: Int) -> Classification {
        Classification(outcomes: every(.retry(reason: reason), max(0, targetCount)),
                       retryAfterUntil: nil, closesGate: true)
    }

    // MARK: - Status

    private static func outcomes(
        status: Int, body: [UInt8], targetCount: Int, kind: TargetKind, format: RequestFormat
    ) -> [Outcome] {
        switch status {
        case 200:
            switch format {
            case .json: jsonReplyOutcomes(body, targetCount: targetCount, kind: kind)
            case .plainText: plainTextReplyOutcomes(body, targetCount: targetCount)
            }
        case 400:
            every(.deadMessage(reason: badRequestReason(body)), targetCount)
        case 401:
            every(.pauseApp(reason: .unauthorized), targetCount)
        case 500:
            every(.retry(reason: .internalServerError), targetCount)
        case 501...599:
            every(.retry(reason: .unavailable), targetCount)
        default:
            // 403, 404, 429, redirects, other 2xx: not in FCM's contract, so nothing is known about the targets.
            every(.retry(reason: .httpStatus(status)), targetCount)
        }
    }

    /// A 400 means FCM could not use the message at all. FCM describes the cause in the body: `InvalidParameters`
    /// for wrong names or types, `InvalidJson` / `JSON_PARSING_ERROR` when the JSON did not parse. The rule, on the
    /// first 4 KiB of the body, case-insensitively: one that names `InvalidParameters` is `InvalidParameters`;
    /// else one that names `InvalidJson` or `JSON_PARSING_ERROR` is `InvalidJson`; anything else (an empty body
    /// included) is `InvalidParameters`, because a 400 for JSON Herald itself encoded is far likelier a field
    /// FCM refused than a syntax error.
    static func badRequestReason(_ body: [UInt8]) -> DeliveryReason {
        let text = String(decoding: body.prefix(4096), as: UTF8.self).lowercased()
        if text.contains("invalidparameters") { return .invalidParameters }
        if text.contains("invalidjson") || text.contains("json_parsing_error") { return .invalidJSON }
        return .invalidParameters
    }

    static func every(_ outcome: Outcome, _ count: Int) -> [Outcome] {
        Array(repeating: outcome, count: count)
    }
}
