// MARK: - Plain-text replies (HTTP 200)

extension Classifier {
    /// `id=<message id>` with an optional `registration_id=<canonical token>` line, or `Error=<code>`.
    /// Keys are matched case-insensitively, lines may end in CRLF, blank lines and unknown lines after the first
    /// are ignored. A plain-text request carries exactly one token, so any other `targetCount` is a mismatch.
    static func plainTextReplyOutcomes(_ body: [UInt8], targetCount: Int) -> [Outcome] {
        guard targetCount == 1 else { return every(.retry(reason: .mismatchedResults), targetCount) }
        guard let text = String(validating: body, as: UTF8.self) else {
            return [.retry(reason: .invalidResponse)]
        }
        let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .map { $0.trimming(" \t") }
            .filter { !$0.isEmpty }
        guard let first = lines.first.flatMap(keyValue) else { return [.retry(reason: .invalidResponse)] }
        switch first.key {
        case "id" where !first.value.isEmpty:
            let canonical = lines.dropFirst().lazy.compactMap(keyValue)
                .first { $0.key == "registration_id" && !$0.value.isEmpty }?.value
            return [.delivered(fcmMessageID: first.value, canonicalToken: canonical)]
        case "error":
            return [Outcome(fcmError: first.value)]
        default:
            return [.retry(reason: .invalidResponse)]
        }
    }

    /// `key=value` with the key lower-cased; the value may itself contain `=`.
    private static func keyValue(_ line: Substring) -> (key: String, value: String)? {
        guard let equals = line.firstIndex(of: "=") else { return nil }
        return (line[..<equals].lowercased(), String(line[line.index(after: equals)...]))
    }
}

extension Substring {
    fileprivate func trimming(_ set: String) -> Substring {
        guard let first = firstIndex(where: { !set.contains($0) }), let last = lastIndex(where: { !set.contains($0) })
        else { return "" }
        return self[first...last]
    }
}
