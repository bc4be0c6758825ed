/// Durations as operators write them (the CLI's options, the console API's `since`): a whole number and a unit,
/// `90s`, `15m`, `12h`, `7d`.
public enum DurationText {
    private static let units: [Character: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000]
    /// Ten years: anything longer is a typo.
    private static let maximumMillis: Int64 = 3650 * 86_400_000

    /// The duration in milliseconds, or nil when `text` is not one.
    public static func millis(_ text: String) -> Int64? {
        guard let unit = text.last, let scale = units[unit] else { return nil }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
              let value = Int64(digits), value <= maximumMillis / scale
        else { return nil }
        return value * scale
    }

    /// A duration for people, in its two largest units: `45s`, `3m12s`, `2h5m`, `7d`; `0s` under a second.
    public static func format(_ millis: Int64) -> String {
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
