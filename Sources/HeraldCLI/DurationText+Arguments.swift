import Support

extension DurationText {
    /// The value of option `name` as a duration in milliseconds; nil when it is absent.
    static func option(_ name: String, in arguments: Arguments) throws -> Int64? {
        guard let text = arguments.value(name) else { return nil }
        guard let millis = millis(text) else {
            throw Arguments.UsageError(
                description: "--\(name) \(text) is not a duration; write it like 90s, 15m, 12h or 7d")
        }
        return millis
    }
}
