@testable import Classify
import Testing

@Suite struct RetryAfterTests {
    /// 30 s before RFC 9110's example date, Sun, 06 Nov 1994 08:49:37 GMT (784111777 s).
    static let now: Int64 = 784_111_777_000 - 30_000

    struct Case: Sendable, CustomTestStringConvertible {
        let value: String
        let until: Int64?
        var testDescription: String { "Retry-After: \(value)" }
    }

    static let cases: [Case] = [
        Case(value: "120", until: now + 120_000),
        Case(value: "0", until: now),
        Case(value: " 7 ", until: now + 7_000),
        Case(value: "007", until: now + 7_000),
        Case(value: "Sun, 06 Nov 1994 08:49:37 GMT", until: 784_111_777_000),
        Case(value: "Sunday, 06-Nov-94 08:49:37 GMT", until: 784_111_777_000),
        Case(value: "Sun Nov  6 08:49:37 1994", until: 784_111_777_000),
        Case(value: "Sun Nov 06 08:49:37 1994", until: 784_111_777_000),
        // In the past: no wait at all, but still a Retry-After.
        Case(value: "Sun, 06 Nov 1994 08:49:00 GMT", until: now),
        Case(value: "Thu, 01 Jan 1970 00:00:00 GMT", until: now),
        // Longer than a day is cut to a day.
        Case(value: "999999999999999999999999999", until: now + 86_400_000),
        Case(value: "Wed, 01 Jan 2070 00:00:00 GMT", until: now + 86_400_000),
        // Garbage is ignored.
        Case(value: "", until: nil),
        Case(value: "soon", until: nil),
        Case(value: "-5", until: nil),
        Case(value: "+5", until: nil),
        Case(value: "1.5", until: nil),
        Case(value: "12 s", until: nil),
        Case(value: "Sun, 06 Nov 1994 08:49:37 UTC", until: nil),
        Case(value: "Sun, 31 Nov 1994 08:49:37 GMT", until: nil),
        Case(value: "Sun, 06 Nov 1994 24:00:00 GMT", until: nil),
        Case(value: "Sun, 06 Nov 1994 08:60:00 GMT", until: nil),
        Case(value: "Sun, 06 nov 1994 08:49:37 GMT", until: nil),
        Case(value: "Xyz, 06 Nov 1994 08:49:37 GMT", until: nil),
        Case(value: "Sun, 6 Nov 1994 08:49:37 GMT", until: nil),
        Case(value: "Sun, 06 Nov 94 08:49:37 GMT", until: nil),
        Case(value: "Sunday, 06-Nov-1994 08:49:37 GMT", until: nil),
        Case(value: "Sun Nov  6 08:49 1994", until: nil),
        Case(value: "Fri, 29 Feb 2019 00:00:00 GMT", until: nil),
    ]

    @Test(arguments: cases)
    func valueBecomesAnAbsoluteTimeOrIsIgnored(_ example: Case) {
        #expect(RetryAfter.until(headers: [("Retry-After", example.value)], now: Self.now) == example.until)
    }

    @Test(arguments: ["Retry-After", "retry-after", "RETRY-AFTER", "rEtRy-AfTeR"])
    func headerNameMatchesInAnyCase(_ name: String) {
        #expect(RetryAfter.until(headers: [(name, "5")], now: Self.now) == Self.now + 5_000)
    }

    @Test func otherHeadersAreNotRetryAfter() {
        let headers = [("Retry-After-Extra", "5"), ("Retry-Afte", "5"), ("Content-Type", "application/json")]
        #expect(RetryAfter.until(headers: headers, now: Self.now) == nil)
    }

    @Test func firstParsableValueWins() {
        let headers = [("Retry-After", "later"), ("retry-after", "9"), ("Retry-After", "60")]
        #expect(RetryAfter.until(headers: headers, now: Self.now) == Self.now + 9_000)
    }

    @Test func leapDayAndLeapSecondAreValid() {
        #expect(HTTPDate.unixSeconds("Tue, 29 Feb 2000 23:59:59 GMT", now: 0) == 951_868_799)
        #expect(HTTPDate.unixSeconds("Thu, 29 Feb 2024 12:00:00 GMT", now: 0) == 1_709_208_000)
        #expect(HTTPDate.unixSeconds("Tue, 29 Feb 2000 23:59:60 GMT", now: 0) == 951_868_800)
        #expect(HTTPDate.unixSeconds("Thu, 29 Feb 1900 00:00:00 GMT", now: 0) == nil)
    }

    /// RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is the most recent past year with those digits.
    @Test func rfc850TwoDigitYearIsWithinFiftyYearsAhead() {
        let newYear2024: Int64 = 1_704_067_200_000
        #expect(HTTPDate.fullYear(70, now: newYear2024) == 2070)
        #expect(HTTPDate.fullYear(80, now: newYear2024) == 1980)
        #expect(HTTPDate.fullYear(24, now: newYear2024) == 2024)
        #expect(HTTPDate.fullYear(94, now: newYear2024) == 1994)
        #expect(HTTPDate.unixSeconds("Wednesday, 01-Jan-70 00:00:00 GMT", now: newYear2024) == 3_155_760_000)
        #expect(HTTPDate.unixSeconds("Tuesday, 01-Jan-80 00:00:00 GMT", now: newYear2024) == 315_532_800)
    }

    @Test func extremeClocksDoNotTrap() {
        #expect(RetryAfter.until(headers: [("Retry-After", "60")], now: .max) == .max)
        #expect(RetryAfter.until(headers: [("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")], now: .min) == nil)
    }
}
