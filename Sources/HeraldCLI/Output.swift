import Foundation
import Support

/// Printing for commands: one JSON document for `--json`, times and ages for people.
enum Output {
    /// Prints `value` as one line of JSON on standard output.
    static func json(_ value: JSON) {
        print(value.serialized())
    }

    /// A time in UTC, to the second: `2024-11-21T12:00:03Z`; "-" for none.
    static func time(_ millis: Int64?) -> String {
        guard let millis else { return "-" }
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// "1 dead letter", "2 dead letters": `count` and the noun, plural unless it is 1.
    static func count(_ count: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
    }

    /// `millis` relative to `now`: "in 12s", "3m4s ago", "now".
    static func relative(_ millis: Int64, now: Int64) -> String {
        let delta = millis - now
        if abs(delta) < 1000 { return "now" }
        return delta > 0 ? "in \(DurationText.format(delta))" : "\(DurationText.format(-delta)) ago"
    }
}

extension JSON {
    /// `null` for nil.
    static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }
    static func optional(_ value: Int64?) -> JSON { value.map(JSON.int) ?? .null }
}
