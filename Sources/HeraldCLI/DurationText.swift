/// Durations as operators write them on the command line: a whole number and a unit, `90s`, `15m`, `12h`, `7d`.
enum DurationText {
    private static let units: [Character: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000]
    /// Ten years: anything longer is a typo.
    private static let maximumMillis: Int64 = 3650 * 86_400_000

    /// The duration in milliseconds, or nil when `text` is not one.
    static func millis(_ text: String) -> Int64? {
        guard let unit = text.last, let scale = units[unit] else { return nil }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
              let value = Int64(digits), value <= maximumMillis / scale
        else { return nil }
        return value * scale
    }

    /// The value of option `name` as a duration in milliseconds; nil when it is absent.
    static func option(_ name: String, in arguments: Arguments) throws -> Int64? {
        guard let text = arguments.value(name) else { return nil }
        guard let millis = millis(text) else {
            throw Arguments.UsageError(
                description: "--\(name) \(text) is not a duration; write it like 90s, 15m, 12h or 7d")
        }
        return millis
    }

    /// A duration for people, in its two largest units: `45s`, `3m12s`, `2h5m`, `7d`; `0s` under a second.
    static func format(_ millis: Int64) -> String {
        let seconds = max(0, millis) / 1000
        let parts: [(Int64, String)] = [
            (seconds / 86_400, "d"), (seconds / 3600 % 24, "h"), (seconds / 60 % 60, "m"), (seconds % 60, "s"),
        ]
        guard let first = parts.firstIndex(where: { $0.0 > 0 }) else { return "0s" }
        return parts[first..<min(first + 2, parts.count)]
            .filter { $0.0 > 0 }
            .map { "\($0.0)\($0.1)" }
            .joined()
    }
}
