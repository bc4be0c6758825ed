import Glibc

/// Times written as RFC 3339 / ISO 8601 in UTC, to the millisecond: `2026-11-28T04:31:39.123Z`.
public enum ISO8601 {
    /// `millis` (Unix milliseconds) in UTC.
    public static func millis(_ millis: Int64) -> String {
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let fields = [
            (Int(parts.tm_year) + 1900, 4), (Int(parts.tm_mon) + 1, 2), (Int(parts.tm_mday), 2),
            (Int(parts.tm_hour), 2), (Int(parts.tm_min), 2), (Int(parts.tm_sec), 2), (Int(millis % 1000), 3),
        ].map { value, width in String(repeating: "0", count: max(0, width - String(value).count)) + String(value) }
        return "\(fields[0])-\(fields[1])-\(fields[2])T\(fields[3]):\(fields[4]):\(fields[5]).\(fields[6])Z"
    }
}
