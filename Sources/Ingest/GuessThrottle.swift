import HTTP
import Support
import Synchronization

/// Makes guessing a token slow (SPEC §20): after `allowedFailures` wrong bearer tokens or console logins within
/// `windowMillis` from one client address, that address's token checks answer "retry after" without comparing
/// anything — for 1 s, then twice as long after each further failure, up to `maxBlockMillis` — until a check
/// passes. Other addresses are not affected. Each failure is logged with the client's address, never the token.
///
/// ```swift
/// switch guesses.check(request.peer, "bearer token") { constantTimeEquals(presented, token) ? () : nil } {
/// case .passed: …   case .refused: 401   case .throttled(let seconds): 429 with Retry-After: seconds
/// }
/// ```
///
/// An IPv6 client counts by its /64, which one machine usually holds whole. Memory is bounded: at most `capacity`
/// addresses are remembered, an address forgotten `forgetMillis` after its last failure, the longest quiet first when
/// full. With nobody failing, a passing check costs one atomic load.
public final class GuessThrottle: Sendable {
    public static let allowedFailures = 5
    public static let windowMillis: Int64 = 60_000
    public static let firstBlockMillis: Int64 = 1000
    public static let maxBlockMillis: Int64 = 60_000
    public static let forgetMillis: Int64 = 10 * 60_000
    public static let capacity = 4096

    /// What a token check found.
    public enum Verdict<Value> {
        case passed(Value)
        case refused
        /// Not checked: the address failed too often; it may try again after this many seconds.
        case throttled(retryAfterSeconds: Int)
    }

    private struct Record {
        var windowStart: Int64
        var failures = 0
        var lastFailure: Int64
        var blockedUntil: Int64 = 0
        /// Nil until the address is first blocked; from then on every failure blocks it again, this long.
        var nextBlockMillis: Int64?
    }

    private let clock: @Sendable () -> Int64
    private let records = Mutex<[PeerAddress?: Record]>([:])
    /// `records.count`, readable without the lock.
    private let remembered = Atomic<Int>(0)

    /// - Parameter clock: milliseconds since the epoch; tests move it by hand.
    public init(clock: @escaping @Sendable () -> Int64 = Clock.nowMillis) {
        self.clock = clock
    }

    /// How many addresses are remembered now (never more than `capacity`).
    public var rememberedAddresses: Int { remembered.load(ordering: .relaxed) }

    /// Runs `check` (a token comparison: the value it grants, or nil) for a token `peer` presented, unless `peer` is
    /// throttled; records the outcome. `what` names the check in the log line of a failure.
    public func check<Value>(_ peer: PeerAddress?, _ what: String, _ check: () -> Value?) -> Verdict<Value> {
        guard remembered.load(ordering: .relaxed) > 0 else {
            // Nobody is failing: nothing to look up, and nothing to forget if this passes.
            guard let value = check() else { return failed(peer, what) }
            return .passed(value)
        }
        let key = Self.key(peer)
        let now = clock()
        let blockedUntil = records.withLock { $0[key]?.blockedUntil } ?? 0
        if blockedUntil > now { return .throttled(retryAfterSeconds: Self.seconds(blockedUntil - now)) }
        guard let value = check() else { return failed(peer, what) }
        records.withLock { records in
            if records.removeValue(forKey: key) != nil { remembered.store(records.count, ordering: .relaxed) }
        }
        return .passed(value)
    }

    private func failed<Value>(_ peer: PeerAddress?, _ what: String) -> Verdict<Value> {
        let now = clock()
        let record = records.withLock { records in
            let key = Self.key(peer)
            var record = records[key].flatMap { now - $0.lastFailure < Self.forgetMillis ? $0 : nil }
                ?? Record(windowStart: now, lastFailure: now)
            if now - record.windowStart >= Self.windowMillis {
                (record.windowStart, record.failures) = (now, 0)
            }
            record.failures += 1
            record.lastFailure = now
            if let block = record.nextBlockMillis ?? (record.failures >= Self.allowedFailures
                ? Self.firstBlockMillis : nil)
            {
                record.blockedUntil = now + block
                record.nextBlockMillis = min(2 * block, Self.maxBlockMillis)
            }
            if records[key] == nil { makeRoom(in: &records, now: now) }
            records[key] = record
            remembered.store(records.count, ordering: .relaxed)
            return record
        }
        Log.warn("wrong token", [
            "client": .string(peer?.description ?? "unknown"), "check": .string(what),
            "failures": .int(Int64(record.failures)),
            "throttled_seconds": .int(Int64(record.blockedUntil > now ? Self.seconds(record.blockedUntil - now) : 0)),
        ])
        return .refused
    }

    /// Forgets addresses quiet for `forgetMillis`, then, if still full, the one quiet longest.
    private func makeRoom(in records: inout [PeerAddress?: Record], now: Int64) {
        guard records.count >= Self.capacity else { return }
        records = records.filter { now - $0.value.lastFailure < Self.forgetMillis }
        if records.count >= Self.capacity,
           let quietest = records.min(by: { $0.value.lastFailure < $1.value.lastFailure })
        {
            records[quietest.key] = nil
        }
    }

    private static func key(_ peer: PeerAddress?) -> PeerAddress? {
        guard case .ipv6(let high, _) = peer else { return peer }
        return .ipv6(high: high, low: 0)
    }

    private static func seconds(_ millis: Int64) -> Int {
        Int((millis + 999) / 1000)
    }
}
