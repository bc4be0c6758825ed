@testable import FCMSimulator
import Testing

@Suite struct HTTPDateTests {
    @Test(arguments: [
        (Int64(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT"),
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
    ])
    func formatsIMFFixdate(seconds: Int64, text: String) {
        #expect(HTTPDate.format(unixSeconds: seconds) == text)
    }

    @Test(arguments: [
        (Int64(784_111_777_000), "Sun, 06 Nov 1994 08:49:39 GMT"),
        (784_111_777_001, "Sun, 06 Nov 1994 08:49:40 GMT"),
    ])
    func retryAfterDateRoundsUpToAWholeSecond(nowMillis: Int64, header: String) {
        #expect(FCMSimulator.RetryAfter.date(secondsFromNow: 2).headerValue(nowMillis: nowMillis) == header)
    }
}
