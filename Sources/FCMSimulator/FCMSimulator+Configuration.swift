import Foundation

extension FCMSimulator {
    /// How the shell behaves, for every side: token aliases, request-level faults, the request log, the HTTPS
    /// listener. `FCMSimulator.parse(arguments:sides:)` builds one from `herald fcm-sim` flags.
    ///
    /// ```swift
    /// let simulator = FCMSimulator(configuration: .init(
    ///     aliases: ["8": "unavail-1-8", "15": "invalid-15", "23": "canon-23-to-32", "42": "notreg-42"],
    ///     failRate: 0.01, retryAfter: .seconds(2), seed: 7))
    /// ```
    public struct Configuration: Sendable, Equatable {
        /// Exact token → behaviour token (`"42": "notreg-42"`), so tests can use tokens that carry no prefix.
        public var aliases: [String: String]
        /// Fraction (0…1) of sends answered with `failStatus`.
        public var failRate: Double
        /// Status of injected server failures, 500…599.
        public var failStatus: Int
        /// `Retry-After` on injected server failures; nil sends none.
        public var retryAfter: RetryAfter?
        /// Fraction (0…1) of sends answered 401 whatever their key.
        public var unauthorizedRate: Double
        /// Fraction (0…1) of replies delayed by `slowMilliseconds`.
        public var slowRate: Double
        public var slowMilliseconds: Int
        /// Fraction (0…1) of sends dropped (see `FCMSimulator` on what a drop is).
        public var dropRate: Double
        /// Seeds the fault draws; nil picks one at random (reported by `stats()`).
        public var seed: UInt64?
        /// How many recent requests `stats()` keeps; 0 keeps none.
        public var requestLogLimit: Int
        /// The most tokens the kept requests may hold together: older requests go first, so large multicasts in
        /// a benchmark cannot grow the log without bound.
        public var requestLogTokenLimit: Int
        /// Where `herald fcm-sim` also serves HTTPS (`--tls-listen`, `serveTLS`); nil serves cleartext only. Read by
        /// whoever starts the servers, not by the handler.
        public var tls: FCMSimulator.TLSListener?

        public init(
            aliases: [String: String] = [:],
            failRate: Double = 0,
            failStatus: Int = 503,
            retryAfter: RetryAfter? = nil,
            unauthorizedRate: Double = 0,
            slowRate: Double = 0,
            slowMilliseconds: Int = 1000,
            dropRate: Double = 0,
            seed: UInt64? = nil,
            requestLogLimit: Int = 10_000,
            requestLogTokenLimit: Int = 200_000,
            tls: FCMSimulator.TLSListener? = nil
        ) {
            self.tls = tls
            self.aliases = aliases
            self.failRate = failRate
            self.failStatus = failStatus
            self.retryAfter = retryAfter
            self.unauthorizedRate = unauthorizedRate
            self.slowRate = slowRate
            self.slowMilliseconds = slowMilliseconds
            self.dropRate = dropRate
            self.seed = seed
            self.requestLogLimit = requestLogLimit
            self.requestLogTokenLimit = requestLogTokenLimit
        }
    }

    /// The `Retry-After` header of an injected server failure.
    public enum RetryAfter: Sendable, Equatable {
        /// Delta-seconds: `Retry-After: 2`.
        case seconds(Int)
        /// An HTTP-date this many seconds after the reply, rounded up to a whole second so it is never earlier.
        case date(secondsFromNow: Int)
        /// Sent as written, e.g. a malformed value to see how a client copes.
        case verbatim(String)

        /// The header value for a reply made at `nowMillis` (Unix milliseconds).
        public func headerValue(nowMillis: Int64) -> String {
            switch self {
            case .seconds(let seconds):
                String(seconds)
            case .date(let seconds):
                HTTPDate.format(unixSeconds: (nowMillis + Int64(seconds) * 1000 + 999).quotientFloor(1000))
            case .verbatim(let value):
                value
            }
        }
    }

    /// How a request in the log came: the two body formats of FCM's legacy HTTP API, or `v1` for any other side's
    /// (FCM v1, APNs, Web Push), as `/stats` has always named them.
    public enum Format: String, Sendable, Equatable {
        case json
        case plain
        case v1
    }
}

private extension Int64 {
    func quotientFloor(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return self % divisor < 0 ? quotient - 1 : quotient
    }
}
