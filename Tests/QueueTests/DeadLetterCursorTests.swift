import Testing

import Queue
import Support

private let t0: Int64 = 1_700_000_000_000

/// The console's page cursor for dead letters (`after=DIEDAT.ID`), and when a dead letter would only expire again.
@Suite struct DeadLetterCursorTests {
    @Test func aCursorReadsBackFromItsText() {
        let cursor = DeadLetterCursor(diedAt: t0, deliveryID: 42)
        #expect(cursor.text == "\(t0).42")
        #expect(DeadLetterCursor(text: cursor.text) == cursor)
        #expect(DeadLetterCursor(text: "0.0") == DeadLetterCursor(diedAt: 0, deliveryID: 0))
    }

    @Test(arguments: ["", "12", "a.b", "1.2.3", ".5", "5.", "-1.5", "1.-5", "1,5", " 1.5", "99999999999999999999.1"])
    func anythingElseIsNoCursor(_ text: String) {
        #expect(DeadLetterCursor(text: text) == nil)
    }

    @Test func theCursorAfterARecordIsItsTimeOfDeathAndId() {
        #expect(DeadLetterCursor(record(expiresAt: t0)) == DeadLetterCursor(diedAt: t0 - 5, deliveryID: 9))
    }

    @Test(arguments: [(t0 - 1, false), (t0, true), (t0 + 1, true)])
    func aDeadLetterWhoseMessageExpiredWouldOnlyExpireAgain(_ now: Int64, _ expired: Bool) {
        #expect(record(expiresAt: t0).isExpired(now: now) == expired)
    }

    private func record(expiresAt: Int64) -> DeadLetterRecord {
        DeadLetterRecord(
            deliveryID: 9, messageID: "m", app: "default", token: "t", reason: .maxAttempts, attempts: 3,
            lastStatus: 503, diedAt: t0 - 5, messageCreatedAt: t0 - 10, messageExpiresAt: expiresAt, ttlSeconds: 0)
    }
}
