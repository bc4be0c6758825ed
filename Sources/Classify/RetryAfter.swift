/// Reads `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an HTTP-date, as an absolute time.
public enum RetryAfter {
    /// The longest wait Herald honours. A broken or hostile endpoint could otherwise close an app's gate for
    /// years with one header; a day is far beyond anything FCM asks for.
    static let maximumMillis: Int64 = 86_400_000

    /// The first parsable `Retry-After` among `headers` (names compared case-insensitively), as absolute Unix
    /// milliseconds: a date in the past gives `now`, a wait longer than `maximumMillis` is cut to it.
    /// Unparsable values are ignored.
    public static func until(headers: [(name: String, value: String)], now: Int64) -> Int64? {
        for header in headers where isRetryAfter(header.name) {
            guard let delay = delayMillis(header.value, now: now) else { continue }
            return now.saturatingAdd(min(max(delay, 0), maximumMillis))
        }
        return nil
    }

    /// Milliseconds from `now` until the time `value` names, possibly negative for a date in the past.
    static func delayMillis(_ value: String, now: Int64) -> Int64? {
        let trimmed = value.trimmingASCIIWhitespace()
        if let seconds = deltaSeconds(trimmed) {
            return seconds * 1000
        }
        if let date = HTTPDate.unixSeconds(trimmed, now: now) {
            let (millis, overflow) = date.multipliedReportingOverflow(by: 1000)
            guard !overflow else { return nil }
            return millis.subtractingReportingOverflow(now).overflow ? nil : millis - now
        }
        return nil
    }

    /// `1*DIGIT`, saturating well past `maximumMillis` instead of overflowing.
    private static func deltaSeconds(_ text: Substring) -> Int64? {
        guard !text.isEmpty else { return nil }
        var seconds: Int64 = 0
        for byte in text.utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            seconds = min(seconds * 10 + Int64(byte - UInt8(ascii: "0")), maximumMillis)
        }
        return seconds
    }

    private static func isRetryAfter(_ name: String) -> Bool {
        let expected = "retry-after".utf8
        return name.utf8.count == expected.count && zip(name.utf8, expected).allSatisfy { byte, lower in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 == lower : byte == lower
        }
    }
}

extension String {
    fileprivate func trimmingASCIIWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return self[first...last]
    }
}
