import Foundation

/// `Retry-After`: delta-seconds or an HTTP-date (IMF-fixdate, and the obsolete RFC 850 and asctime forms).
public enum RetryAfter {
    /// The absolute Unix millisecond the header names, never before `now`; nil for a value that is neither form.
    public static func parse(_ value: String, now: Int64) -> Int64? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Saturate absurd values rather than overflow: a day is already "much later".
            let seconds = Int64(text.prefix(9)) ?? 0
            return now + min(seconds, 86_400) * 1000
        }
        for format in formats {
            if let date = format.date(from: text) {
                return max(now, Int64(date.timeIntervalSince1970 * 1000))
            }
        }
        return nil
    }

    private static let formats: [DateFormatter] = [
        "EEE, dd MMM yyyy HH:mm:ss zzz",  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        "EEEE, dd-MMM-yy HH:mm:ss zzz",  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        "EEE MMM d HH:mm:ss yyyy",  // asctime: Sun Nov  6 08:49:37 1994
    ].map { pattern in
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = pattern
        return formatter
    }
}
