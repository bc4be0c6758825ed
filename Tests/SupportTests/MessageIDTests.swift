@testable import Support
import Testing

@Suite struct MessageIDTests {
    @Test func idsAreTwentySixCrockfordCharacters() {
        let id = MessageID.make()
        #expect(id.count == 26)
        #expect(id.allSatisfy { "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains($0) })
    }

    @Test func idsSortInCreationOrderWithinAndAcrossMilliseconds() {
        let sameMillisecond = (0..<1000).map { _ in MessageID.make(now: 1_700_000_000_000) }
        #expect(sameMillisecond == sameMillisecond.sorted())
        #expect(Set(sameMillisecond).count == 1000)
        let later = MessageID.make(now: 1_700_000_000_001)
        #expect(later > sameMillisecond.last!)
    }

    @Test func layoutIsMillisecondsThenRandomBits() {
        // ULID's example time, 1469918176385 ms, is "01ARYZ6S41"; the random bits follow.
        #expect(MessageID.format(millis: 1_469_918_176_385, high: 0, low: 0) == "01ARYZ6S410000000000000000")
        #expect(MessageID.format(millis: 1_469_918_176_385, high: 0, low: 1) == "01ARYZ6S410000000000000001")
        #expect(MessageID.format(millis: 0, high: 0xFFFF, low: .max) == "0000000000ZZZZZZZZZZZZZZZZ")
    }
}
