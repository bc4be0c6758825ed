import Support
import Testing

@testable import Queue

/// What an outcome that ends a delivery writes (`DeliveryUpdate.ending`, applied by `QueueStore+Outcomes.swift`):
/// its terminal state, reason and status, and whether the attempt is charged.
@Suite struct DeliveryUpdateTests {
    struct Ending: Sendable, Equatable, CustomTestStringConvertible {
        var state: DeliveryState
        var reason: DeliveryReason
        var status: Int?
        var charges: Bool

        var testDescription: String { "\(state)/\(reason.rawValue) \(status.map(String.init) ?? "-") \(charges)" }
    }

    @Test(arguments: [
        (DeliveryUpdate.dropped(id: 1, reason: .notRegistered, status: 200),
         Ending(state: .dropped, reason: .notRegistered, status: 200, charges: true)),
        (.dead(id: 2, reason: .invalidRegistration, status: 200),
         Ending(state: .dead, reason: .invalidRegistration, status: 200, charges: true)),
        (.deadMessage(id: 3, reason: .messageTooBig, status: 400),
         Ending(state: .dead, reason: .messageTooBig, status: 400, charges: true)),
        // The TTL ran out before a send: nothing was attempted, so nothing is charged.
        (.expired(id: 4), Ending(state: .dead, reason: .expired, status: nil, charges: false)),
        (.forgetToken(id: 5, state: .dropped, reason: .apns(.unregistered), status: 410, since: 7),
         Ending(state: .dropped, reason: .apns(.unregistered), status: 410, charges: true)),
        (.forgetToken(id: 6, state: .dead, reason: .apns(.badDeviceToken), status: 400, since: nil),
         Ending(state: .dead, reason: .apns(.badDeviceToken), status: 400, charges: true)),
    ])
    func anEndingOutcomeWritesItsStateReasonAndCharge(_ update: DeliveryUpdate, _ ending: Ending) {
        let written = update.ending
        #expect(Ending(state: written.state, reason: written.reason, status: written.status, charges: written.charges)
            == ending)
        #expect(written.state.isTerminal)
    }

    @Test(arguments: [
        (DeliveryUpdate.delivered(id: 1, fcmMessageID: nil, canonicalToken: "c", status: 200), 1 as Int64),
        (.dropped(id: 2, reason: .collapsed, status: nil), 2),
        (.dead(id: 3, reason: .maxAttempts, status: nil), 3),
        (.deadMessage(id: 4, reason: .invalidDataKey, status: 200), 4),
        (.retry(id: 5, at: 9, reason: .unavailable, status: 503), 5),
        (.release(id: 6), 6),
        (.deferred(id: 7, until: 9, reason: nil, status: nil), 7),
        (.expired(id: 8), 8),
        (.forgetToken(id: 9, state: .dropped, reason: .notRegistered, status: 410, since: nil), 9),
    ])
    func everyUpdateNamesItsDelivery(_ update: DeliveryUpdate, _ id: Int64) {
        #expect(update.id == id)
    }
}
