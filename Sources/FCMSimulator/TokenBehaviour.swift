/// What the simulator does with one token or topic, read from its name (see `FCMSimulator.help(sides:)`): the rule
/// every side answers in its own words.
///
/// ```swift
/// TokenBehaviour(token: "unavail-2-x")      // .failFirst(times: 2, code: "Unavailable")
/// TokenBehaviour(token: "canon-23-to-32")   // .canonical(newToken: "32")
/// TokenBehaviour(token: "anything-else")    // .deliver
/// ```
///
/// A name that starts like a rule but does not follow it (`unavail-x-1`, `canon-23`) is delivered, so that every
/// token has exactly one meaning.
public enum TokenBehaviour: Equatable, Sendable {
    case deliver
    /// Delivered, and the reply names `newToken` as the canonical registration ID.
    case canonical(newToken: String)
    /// The error `code` every time.
    case fail(code: String)
    /// The error `code` the first `times` times this exact name is seen, then delivered.
    case failFirst(times: Int, code: String)

    private static let fixed: [(prefix: String, code: String)] = [
        ("notreg-", "NotRegistered"),
        ("invalid-", "InvalidRegistration"),
        ("mismatch-", "MismatchSenderId"),
        ("badpkg-", "InvalidPackageName"),
        ("apns-", "InvalidApnsCredential"),
    ]

    private static let counted: [(prefix: String, code: String)] = [
        ("unavail-", "Unavailable"),
        ("internal-", "InternalServerError"),
        ("ratelimit-", "DeviceMessageRateExceeded"),
    ]

    /// The behaviour of a device token (after alias lookup).
    public init(token: String) {
        if token.isEmpty {
            self = .fail(code: "MissingRegistration")
            return
        }
        for rule in Self.fixed where token.hasPrefix(rule.prefix) {
            self = .fail(code: rule.code)
            return
        }
        for rule in Self.counted where token.hasPrefix(rule.prefix) {
            self = Self.count(after: token.dropFirst(rule.prefix.count)).map { .failFirst(times: $0, code: rule.code) }
                ?? .deliver
            return
        }
        if token.hasPrefix("canon-") {
            let rest = token.dropFirst("canon-".count)
            if let separator = rest.firstRange(of: "-to-"), separator.upperBound < rest.endIndex {
                self = .canonical(newToken: String(rest[separator.upperBound...]))
                return
            }
        } else if token.hasPrefix("error-"), let code = Self.errorCode(after: token.dropFirst("error-".count)) {
            self = .fail(code: code)
            return
        }
        self = .deliver
    }

    /// The behaviour of a topic, by its name without `/topics/`: `ratelimit-N-…` and `error-<Code>-…`.
    public init(topic: Substring) {
        if topic.hasPrefix("ratelimit-"), let times = Self.count(after: topic.dropFirst("ratelimit-".count)) {
            self = .failFirst(times: times, code: "TopicsMessageRateExceeded")
        } else if topic.hasPrefix("error-"), let code = Self.errorCode(after: topic.dropFirst("error-".count)) {
            self = .fail(code: code)
        } else {
            self = .deliver
        }
    }

    /// `N` from `N-…` or a bare `N`.
    private static func count(after text: Substring) -> Int? {
        let digits = text.prefix(while: { $0.isASCII && $0.isNumber })
        guard !digits.isEmpty, digits.count <= 9, digits.endIndex == text.endIndex || text[digits.endIndex] == "-"
        else { return nil }
        return Int(digits)
    }

    /// `Code` from `Code-…` or a bare `Code`.
    private static func errorCode(after text: Substring) -> String? {
        let code = text.prefix(while: { $0 != "-" })
        return code.isEmpty ? nil : String(code)
    }
}
