import Foundation
import Support

/// FCM legacy answers → one `Outcome` per target. A pure function: no clock, no I/O, no state.
///
/// ```swift
/// let result = Classifier.classify(status: 200, headers: [], body: Array(#"{"results":[{"error":"NotRegistered"}]}"#.utf8),
///                                  targetCount: 1, kind: .tokens, format: .json, now: 0)
/// result.outcomes  // [.notRegistered]
/// ```
public enum Classifier {
    /// Per-token errors that only that token can never recover from.
    static let deadTokenErrors: Set = ["InvalidRegistration", "MismatchSenderId", "InvalidPackageName", "MissingRegistration"]
    /// Errors about the message itself: every token of it would fail the same way.
    static let deadMessageErrors: Set = ["MessageTooBig", "InvalidDataKey", "InvalidTtl", "InvalidParameters", "InvalidJson"]
    static let slowErrors: Set = ["DeviceMessageRateExceeded", "TopicsMessageRateExceeded"]

    public static func classify(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], targetCount: Int, kind: TargetKind,
        format: RequestFormat, now: Int64
    ) -> Classification {
        let retryAfter = headers.first(where: { $0.name.lowercased() == "retry-after" })
            .flatMap { RetryAfter.parse($0.value, now: now) }
        let closesGate = status >= 500 || retryAfter != nil
        func all(_ outcome: Outcome) -> Classification {
            Classification(
                outcomes: Array(repeating: outcome, count: targetCount), retryAfterUntil: retryAfter, closesGate: closesGate)
        }
        switch status {
        case 200:
            break
        case 400:
            // FCM answers 400 for a body it could not parse as JSON, and for fields of the wrong name or type.
            let text = String(decoding: body.prefix(512), as: UTF8.self).lowercased()
            return all(.deadMessage(reason: text.contains("json") && !text.contains("field") ? "InvalidJson" : "InvalidParameters"))
        case 401:
            return all(.pauseApp(reason: "Unauthorized"))
        case 500:
            return all(.retry(reason: "InternalServerError"))
        case 501...599:
            return all(.retry(reason: "Unavailable"))
        default:
            return all(.retry(reason: "HTTP \(status)"))
        }
        let outcomes: [Outcome]
        switch format {
        case .plainText: outcomes = plainText(body, targetCount: targetCount)
        case .json: outcomes = json(body, targetCount: targetCount, kind: kind)
        }
        return Classification(outcomes: outcomes, retryAfterUntil: retryAfter, closesGate: closesGate)
    }

    /// A timeout, reset, DNS or connect failure: nothing is known, so every target retries and the gate closes.
    public static func transportFailure(reason: String, targetCount: Int) -> Classification {
        Classification(outcomes: Array(repeating: .retry(reason: reason), count: targetCount), closesGate: true)
    }

    /// The outcome FCM's error `code` stands for.
    public static func outcome(forError code: String) -> Outcome {
        if code == "NotRegistered" { return .notRegistered }
        if deadTokenErrors.contains(code) { return .deadToken(reason: code) }
        if deadMessageErrors.contains(code) { return .deadMessage(reason: code) }
        if slowErrors.contains(code) { return .retrySlow(reason: code) }
        if code == "InvalidApnsCredential" { return .pauseApp(reason: code) }
        // Unavailable, InternalServerError, and codes this version does not know: retry, until MaxAttempts.
        return .retry(reason: code)
    }

    // MARK: - Bodies

    private static func json(_ body: [UInt8], targetCount: Int, kind: TargetKind) -> [Outcome] {
        func everyTarget(_ outcome: Outcome) -> [Outcome] { Array(repeating: outcome, count: targetCount) }
        guard let reply = try? JSON.parse(body), reply.objectValue != nil else {
            return everyTarget(.retry(reason: "InvalidResponse"))
        }
        if let results = reply["results"] {
            guard let results = results.arrayValue, results.count == targetCount else {
                // Results cannot be matched to tokens: nothing is known about any of them.
                return everyTarget(.retry(reason: "MismatchedResults"))
            }
            return results.map(result)
        }
        // Topic and condition replies: {"message_id": 1234} or {"error": "..."}; one target.
        if reply["message_id"] != nil || reply["error"] != nil {
            guard targetCount == 1 else { return everyTarget(.retry(reason: "MismatchedResults")) }
            return [result(reply)]
        }
        // A device-group reply (`to` was a notification key): FCM reports members it could not reach, not which.
        // A retry re-sends to the whole group, so members that got it see a duplicate; dropping instead would
        // lose the push for the rest. At-least-once wins.
        if let failure = reply["failure"]?.int64Value, reply["success"] != nil, targetCount == 1 {
            return [failure == 0 ? .delivered(fcmMessageID: nil, canonicalToken: nil) : .retry(reason: "DeviceGroupPartialFailure")]
        }
        return everyTarget(.retry(reason: "InvalidResponse"))
    }

    private static func result(_ result: JSON) -> Outcome {
        if let error = result["error"]?.stringValue { return outcome(forError: error) }
        guard let messageID = result["message_id"] else { return .retry(reason: "InvalidResponse") }
        let id: String? = switch messageID {
        case .string(let text): text
        case .number(let lexeme): lexeme
        default: nil
        }
        guard let id else { return .retry(reason: "InvalidResponse") }
        return .delivered(fcmMessageID: id, canonicalToken: result["registration_id"]?.stringValue)
    }

    /// `id=<message id>` with an optional `registration_id=<canonical>` line, or `Error=<code>`.
    private static func plainText(_ body: [UInt8], targetCount: Int) -> [Outcome] {
        let lines = String(decoding: body, as: UTF8.self).split(whereSeparator: \.isNewline).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        var fields: [String: String] = [:]
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals]).lowercased()] = String(line[line.index(after: equals)...])
        }
        let outcome: Outcome
        if let error = fields["error"] {
            outcome = Self.outcome(forError: error)
        } else if let id = fields["id"], !id.isEmpty {
            outcome = .delivered(fcmMessageID: id, canonicalToken: fields["registration_id"].flatMap { $0.isEmpty ? nil : $0 })
        } else {
            outcome = .retry(reason: "InvalidResponse")
        }
        return Array(repeating: targetCount == 1 ? outcome : .retry(reason: "MismatchedResults"), count: targetCount)
    }
}
