@testable import Classify
import Support
import Testing

/// Always the same word: 1 makes `random(in: 0...x)` return 0 and `.max` makes it return x, so the extremes of
/// the jitter can be asserted exactly.
private struct ConstantGenerator: RandomNumberGenerator {
    let value: UInt64
    mutating func next() -> UInt64 { value }
}

private let now: Int64 = 1_700_000_000_000
private let farFuture: Int64 = now + 28 * 86_400_000

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy()

    /// d = min(15 min, 1 s · 2^(n-1)) for the defaults.
    static let ceilings: [(attempt: Int, ceiling: Int64)] = [
        (1, 1_000), (2, 2_000), (3, 4_000), (4, 8_000), (5, 16_000), (6, 32_000), (7, 64_000), (8, 128_000),
        (9, 256_000), (10, 512_000), (11, 900_000), (12, 900_000), (13, 900_000), (14, 900_000), (15, 900_000),
    ]

    @Test(arguments: ceilings)
    func backoffLiesBetweenHalfAndAllOfTheCeiling(_ attempt: Int, _ ceiling: Int64) {
        var lowest = ConstantGenerator(value: 1)
        var highest = ConstantGenerator(value: .max)
        #expect(policy.backoff(attempt: attempt, slow: false, using: &lowest) == ceiling / 2)
        #expect(policy.backoff(attempt: attempt, slow: false, using: &highest) == ceiling)
        var random = SplitMix64(seed: UInt64(attempt))
        for _ in 0..<500 {
            #expect((ceiling / 2...ceiling).contains(policy.backoff(attempt: attempt, slow: false, using: &random)))
        }
    }

    @Test(arguments: [11, 16, 62, 63, 64, 1_000, Int.max])
    func ceilingIsCappedWithoutOverflow(_ attempt: Int) {
        #expect(policy.ceiling(attempt: attempt, slow: false) == 900_000)
        #expect(policy.ceiling(attempt: attempt, slow: true) == 900_000)
        let uncapped = RetryPolicy(baseMillis: 3, capMillis: .max)
        #expect(uncapped.ceiling(attempt: attempt, slow: false) == (attempt <= 62 ? 3 << Int64(attempt - 1) : .max))
    }

    @Test(arguments: [0, -5, Int.min])
    func attemptsBelowOneCountAsTheFirst(_ attempt: Int) {
        #expect(policy.ceiling(attempt: attempt, slow: false) == 1_000)
    }

    @Test func slowLaneStartsAtOneMinuteAndKeepsTheCap() {
        #expect(policy.ceiling(attempt: 1, slow: true) == 60_000)
        #expect(policy.ceiling(attempt: 2, slow: true) == 120_000)
        #expect(policy.ceiling(attempt: 4, slow: true) == 480_000)
        #expect(policy.ceiling(attempt: 5, slow: true) == 900_000)
        var lowest = ConstantGenerator(value: 1)
        #expect(policy.backoff(attempt: 1, slow: true, using: &lowest) == 30_000)
        let decision = policy.next(attempts: 1, slow: true, retryAfterUntil: nil, ttlSeconds: 3600,
                                   expiresAt: farFuture, now: now, using: &lowest)
        #expect(decision == .retry(at: now + 30_000))
    }

    // MARK: - Decisions

    @Test(arguments: 1...11)
    func retriesBeforeMaxAttempts(_ attempts: Int) throws {
        var random = SplitMix64(seed: 7)
        let decision = policy.next(attempts: attempts, slow: false, retryAfterUntil: nil, ttlSeconds: 3600,
                                   expiresAt: farFuture, now: now, using: &random)
        guard case .retry(let at) = decision else {
            Issue.record("expected a retry, got \(decision)")
            return
        }
        let ceiling = try #require(Self.ceilings.first { $0.attempt == attempts }).ceiling
        #expect((now + ceiling / 2...now + ceiling).contains(at))
    }

    @Test(arguments: [12, 13, 100])
    func deadAtMaxAttempts(_ attempts: Int) {
        var random = SplitMix64(seed: 7)
        #expect(policy.next(attempts: attempts, slow: false, retryAfterUntil: nil, ttlSeconds: 3600,
                            expiresAt: farFuture, now: now, using: &random) == .dead(reason: .maxAttempts))
    }

    @Test func maxAttemptsIsConfigurable() {
        let policy = RetryPolicy(maxAttempts: 3)
        var random = SplitMix64(seed: 7)
        #expect(policy.next(attempts: 2, slow: false, retryAfterUntil: nil, ttlSeconds: 3600,
                            expiresAt: farFuture, now: now, using: &random) != .dead(reason: .maxAttempts))
        #expect(policy.next(attempts: 3, slow: false, retryAfterUntil: nil, ttlSeconds: 3600,
                            expiresAt: farFuture, now: now, using: &random) == .dead(reason: .maxAttempts))
    }

    @Test func ttlZeroGetsOnePromptAttemptAndNoRetry() {
        var random = SplitMix64(seed: 7)
        #expect(policy.next(attempts: 1, slow: false, retryAfterUntil: nil, ttlSeconds: 0,
                            expiresAt: farFuture, now: now, using: &random) == .dead(reason: .expired))
    }

    /// With the lowest draw, attempt 1 waits exactly 500 ms: a message expiring at that instant is dead.
    @Test(arguments: [
        (now + 499, RetryDecision.dead(reason: .expired)),
        (now + 500, RetryDecision.dead(reason: .expired)),
        (now + 501, RetryDecision.retry(at: now + 500)),
        (now - 1, RetryDecision.dead(reason: .expired)),
    ])
    func retryAtOrPastExpiryIsExpired(_ expiresAt: Int64, _ expected: RetryDecision) {
        var lowest = ConstantGenerator(value: 1)
        #expect(policy.next(attempts: 1, slow: false, retryAfterUntil: nil, ttlSeconds: 60,
                            expiresAt: expiresAt, now: now, using: &lowest) == expected)
    }

    @Test func retryAfterAboveTheBackoffIsTheFloorPlusUpToASecond() {
        var lowest = ConstantGenerator(value: 1)
        var highest = ConstantGenerator(value: .max)
        #expect(policy.next(attempts: 1, slow: false, retryAfterUntil: now + 120_000, ttlSeconds: 3600,
                            expiresAt: farFuture, now: now, using: &lowest) == .retry(at: now + 120_000))
        #expect(policy.next(attempts: 1, slow: false, retryAfterUntil: now + 120_000, ttlSeconds: 3600,
                            expiresAt: farFuture, now: now, using: &highest) == .retry(at: now + 121_000))
        var random = SplitMix64(seed: 3)
        for _ in 0..<200 {
            let decision = policy.next(attempts: 3, slow: false, retryAfterUntil: now + 120_000, ttlSeconds: 3600,
                                       expiresAt: farFuture, now: now, using: &random)
            guard case .retry(let at) = decision else {
                Issue.record("expected a retry, got \(decision)")
                return
            }
            #expect((now + 120_000...now + 121_000).contains(at))
        }
    }

    @Test(arguments: [now + 5_000, now, now - 60_000])
    func retryAfterBelowTheBackoffChangesNothing(_ retryAfterUntil: Int64) {
        for seed: UInt64 in 0..<50 {
            var withFloor = SplitMix64(seed: seed)
            var without = SplitMix64(seed: seed)
            let floored = policy.next(attempts: 10, slow: false, retryAfterUntil: retryAfterUntil, ttlSeconds: 3600,
                                      expiresAt: farFuture, now: now, using: &withFloor)
            let plain = policy.next(attempts: 10, slow: false, retryAfterUntil: nil, ttlSeconds: 3600,
                                    expiresAt: farFuture, now: now, using: &without)
            #expect(floored == plain)
        }
    }

    @Test func retryAfterPastExpiryIsExpired() {
        var random = SplitMix64(seed: 1)
        #expect(policy.next(attempts: 1, slow: false, retryAfterUntil: now + 600_000, ttlSeconds: 300,
                            expiresAt: now + 300_000, now: now, using: &random) == .dead(reason: .expired))
    }

    @Test func extremeTimesSaturateInsteadOfTrapping() {
        var random = SplitMix64(seed: 1)
        #expect(policy.next(attempts: 5, slow: false, retryAfterUntil: .max, ttlSeconds: 3600,
                            expiresAt: .max, now: 0, using: &random) == .dead(reason: .expired))
        #expect(policy.next(attempts: 5, slow: false, retryAfterUntil: .min, ttlSeconds: 3600,
                            expiresAt: .max, now: .max - 10, using: &random) == .dead(reason: .expired))
    }

    // MARK: - Determinism

    @Test func sameSeedGivesTheSameDecisions() {
        func decisions(seed: UInt64) -> [RetryDecision] {
            var random = SplitMix64(seed: seed)
            return (1...15).map { attempts in
                policy.next(attempts: attempts, slow: attempts % 3 == 0, retryAfterUntil: attempts % 4 == 0
                            ? now + 5_000 : nil, ttlSeconds: 3600, expiresAt: farFuture, now: now, using: &random)
            }
        }
        #expect(decisions(seed: 42) == decisions(seed: 42))
        #expect(decisions(seed: 42) != decisions(seed: 43))
    }

    /// Vigna's reference generator seeded with 0.
    @Test func splitMix64MatchesTheReferenceSequence() {
        var random = SplitMix64(seed: 0)
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(random.next() == 0x06C4_5D18_8009_454F)
    }
}
