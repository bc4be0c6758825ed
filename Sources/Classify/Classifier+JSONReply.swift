import Queue
import Support

// MARK: - JSON replies (HTTP 200)

extension Classifier {
    /// A 200 reply to a JSON request: multicast `results`, a topic/condition reply, or a device-group reply.
    /// Anything else, or a count that does not match the targets sent, retries every target.
    static func jsonReplyOutcomes(_ body: [UInt8], targetCount: Int, kind: TargetKind) -> [Outcome] {
        guard let reply = try? JSON.parse(body), reply.objectValue != nil else {
            return every(.retry(reason: .invalidResponse), targetCount)
        }
        if let results = reply["results"] {
            return multicastOutcomes(results, targetCount: targetCount)
        }
        let single: Outcome
        switch kind {
        case .topic, .condition:
            single = topicOutcome(reply)
        case .tokens:
            // Multicast replies carry `success`/`failure` too; only the absence of `multicast_id` marks a
            // reply to a device group's notification key.
            guard reply["multicast_id"] == nil, reply["failure"] != nil else {
                return every(.retry(reason: .invalidResponse), targetCount)
            }
            single = deviceGroupOutcome(reply)
        }
        guard targetCount == 1 else { return every(.retry(reason: .mismatchedResults), targetCount) }
        return [single]
    }

    /// `results[i]` belongs to target i. When the count differs, the pairing is unknowable and retrying every
    /// target is the only answer that neither loses nor wrongly finishes a delivery (SPEC §11).
    private static func multicastOutcomes(_ results: JSON, targetCount: Int) -> [Outcome] {
        guard case .array(let entries) = results else {
            return every(.retry(reason: .invalidResponse), targetCount)
        }
        guard entries.count == targetCount else {
            return every(.retry(reason: .mismatchedResults), targetCount)
        }
        return entries.map(resultOutcome)
    }

    /// One result: `{"message_id", "registration_id"?}` or `{"error"}`. A malformed entry retries only its own
    /// target: its neighbours' results are still trustworthy, and re-sending them would duplicate. When an entry
    /// holds both keys, `error` wins: FCM never sends both, and not finishing a delivery is the safer reading.
    private static func resultOutcome(_ entry: JSON) -> Outcome {
        guard entry.objectValue != nil else { return .retry(reason: .invalidResponse) }
        let result = entry
        if let error = result["error"] {
            guard case .string(let code) = error else { return .retry(reason: .invalidResponse) }
            return Outcome(fcmError: code)
        }
        guard let messageID = result["message_id"].flatMap(messageIDText) else {
            return .retry(reason: .invalidResponse)
        }
        var canonical: String?
        if case .string(let token)? = result["registration_id"], !token.isEmpty {
            canonical = token
        }
        return .delivered(fcmMessageID: messageID, canonicalToken: canonical)
    }

    /// `{"message_id": 1234567890}` (a JSON integer, kept digit for digit) or `{"error": code}`.
    private static func topicOutcome(_ reply: JSON) -> Outcome {
        if let error = reply["error"] {
            guard case .string(let code) = error else { return .retry(reason: .invalidResponse) }
            return Outcome(fcmError: code)
        }
        guard let messageID = reply["message_id"].flatMap(messageIDText) else {
            return .retry(reason: .invalidResponse)
        }
        return .delivered(fcmMessageID: messageID, canonicalToken: nil)
    }

    /// `{"success": n, "failure": m, "failed_registration_ids": [...]}` for a `to` notification key.
    ///
    /// Herald holds one delivery for the key, not one per member device, so it cannot retry only the members that
    /// failed: the `failed_registration_ids` are tokens it never stored. Any failure therefore retries the whole
    /// key, which is what FCM's own guidance asks of senders. Members that already received the message may get it
    /// again; that is the at-least-once contract, and the lesser harm than silently losing it for the others.
    private static func deviceGroupOutcome(_ reply: JSON) -> Outcome {
        guard let failures = reply["failure"]?.int64Value, failures >= 0 else {
            return .retry(reason: .invalidResponse)
        }
        var failedIDs = 0
        if case .array(let ids)? = reply["failed_registration_ids"] {
            failedIDs = ids.count
        }
        if failures == 0 && failedIDs == 0 {
            return .delivered(fcmMessageID: nil, canonicalToken: nil)
        }
        return .retry(reason: .deviceGroupPartialFailure)
    }

    /// A message id as FCM writes it: a non-empty string (multicast), or an integer (topics) turned into its
    /// decimal text. Fractions, booleans and the rest are not ids.
    private static func messageIDText(_ value: JSON) -> String? {
        switch value {
        case .string(let text) where !text.isEmpty: text
        case .number(let lexeme) where lexeme.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (48...57).contains($0) }):
            lexeme
        default: nil
        }
    }
}
