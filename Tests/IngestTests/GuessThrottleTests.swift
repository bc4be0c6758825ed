import HTTP
import Synchronization
import Testing

@testable import Ingest

/// Guessing a token is slow (SPEC §20): 5 failures in a minute block the address, each later failure doubles the
/// block up to 60 s, a pass ends it, other addresses go on. The clock is moved by hand.
@Suite struct GuessThrottleTests {
    private final class TestClock: Sendable {
        let millis = Atomic<Int64>(1_700_000_000_000)
        func advance(_ by: Int64) { millis.add(by, ordering: .relaxed) }
    }

    private let clock = TestClock()
    private let throttle: GuessThrottle
    private let guesser = PeerAddress.ipv4(0xC633_6407)  // 198.51.100.7
    private let bystander = PeerAddress.ipv4(0xC633_6408)

    init() {
        throttle = GuessThrottle(clock: { [clock] in clock.millis.load(ordering: .relaxed) })
    }

    /// What a check of a wrong (or right) token from `peer` answers, and whether the token was compared at all.
    private func attempt(_ peer: PeerAddress?, right: Bool = false) -> (verdict: String, compared: Bool) {
        var compared = false
        let verdict = throttle.check(peer, "test") { () -> Bool? in
            compared = true
            return right ? true : nil
        }
        switch verdict {
        case .passed: return ("passed", compared)
        case .refused: return ("refused", compared)
        case .throttled(let seconds): return ("throttled \(seconds)", compared)
        }
    }

    private func fail(_ times: Int, from peer: PeerAddress?) {
        for _ in 0..<times { #expect(attempt(peer).verdict == "refused") }
    }

    @Test func fiveFailuresInAMinuteBlockTheAddressWithoutCheckingAndOthersGoOn() {
        fail(4, from: guesser)
        #expect(attempt(guesser, right: true) == ("passed", true), "four failures block nothing")
        fail(5, from: guesser)
        #expect(attempt(guesser, right: true) == ("throttled 1", false), "not even the right token is compared")
        #expect(attempt(guesser) == ("throttled 1", false))
        #expect(attempt(bystander, right: true) == ("passed", true))
        #expect(attempt(bystander) == ("refused", true))
    }

    @Test func eachFailureAfterABlockDoublesItUpToAMinute() {
        fail(5, from: guesser)
        var expected: Int64 = 1
        for _ in 0..<9 {
            #expect(attempt(guesser).verdict == "throttled \(expected)")
            clock.advance(expected * 1000)
            #expect(attempt(guesser) == ("refused", true), "after the block the token is compared again")
            expected = min(2 * expected, 60)
        }
        #expect(attempt(guesser).verdict == "throttled 60")
        clock.advance(30_500)
        #expect(attempt(guesser).verdict == "throttled 30", "Retry-After counts down, rounded up")
    }

    @Test func aPassAfterTheBlockEndsIt() {
        fail(5, from: guesser)
        clock.advance(1000)
        #expect(attempt(guesser, right: true) == ("passed", true))
        fail(4, from: guesser)
        #expect(attempt(guesser, right: true) == ("passed", true), "the count starts again from zero")
    }

    @Test func failuresMoreThanAMinuteApartAreNotCountedTogether() {
        fail(4, from: guesser)
        clock.advance(GuessThrottle.windowMillis)
        fail(4, from: guesser)
        #expect(attempt(guesser, right: true) == ("passed", true))
    }

    @Test func anIPv6ClientCountsByItsSlash64() {
        let first = PeerAddress.ipv6(high: 0x2001_0DB8_0000_0001, low: 1)
        let sameNetwork = PeerAddress.ipv6(high: 0x2001_0DB8_0000_0001, low: 0xFFFF)
        let otherNetwork = PeerAddress.ipv6(high: 0x2001_0DB8_0000_0002, low: 1)
        fail(3, from: first)
        fail(2, from: sameNetwork)
        #expect(attempt(first, right: true).verdict == "throttled 1")
        #expect(attempt(otherNetwork, right: true).verdict == "passed")
    }

    @Test func memoryIsBoundedWhateverTheNumberOfAddresses() {
        for address in 0..<UInt32(GuessThrottle.capacity + 100) {
            #expect(attempt(.ipv4(0x0A00_0000 | address)).verdict == "refused")
        }
        #expect(throttle.rememberedAddresses == GuessThrottle.capacity)
        fail(5, from: guesser)
        #expect(attempt(guesser).verdict == "throttled 1", "the newest guesser is remembered")
        #expect(throttle.rememberedAddresses == GuessThrottle.capacity)
        clock.advance(GuessThrottle.forgetMillis)
        _ = attempt(bystander)
        #expect(throttle.rememberedAddresses <= 2, "quiet addresses are forgotten")
    }
}
