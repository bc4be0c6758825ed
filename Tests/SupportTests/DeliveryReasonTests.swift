import Support
import Testing

@Suite struct DeliveryReasonTests {
    /// Every reason with a case, by the text stored for it today (SPEC §4, §6). Users script against these: a row
    /// that fails here means a stored value changed. (A provider's own codes are pinned in its folder's tests, and
    /// `ProviderListTests` checks that none is the text of a case here.)
    static let stored: [(text: String, reason: DeliveryReason)] = [
        ("NotRegistered", .notRegistered), ("InvalidRegistration", .invalidRegistration),
        ("MismatchSenderId", .mismatchSenderID), ("InvalidPackageName", .invalidPackageName),
        ("MissingRegistration", .missingRegistration), ("MessageTooBig", .messageTooBig),
        ("InvalidDataKey", .invalidDataKey), ("InvalidTtl", .invalidTTL), ("InvalidParameters", .invalidParameters),
        ("InvalidJson", .invalidJSON), ("Unavailable", .unavailable), ("InternalServerError", .internalServerError),
        ("DeviceMessageRateExceeded", .deviceMessageRateExceeded),
        ("TopicsMessageRateExceeded", .topicsMessageRateExceeded), ("InvalidApnsCredential", .invalidAPNsCredential),
        ("Expired", .expired), ("MaxAttempts", .maxAttempts), ("Collapsed", .collapsed), ("Replaced", .replaced),
        ("Cancelled", .cancelled), ("CanonicalId", .canonicalID), ("InvalidResponse", .invalidResponse),
        ("MismatchedResults", .mismatchedResults), ("DeviceGroupPartialFailure", .deviceGroupPartialFailure),
        ("Unauthorized", .unauthorized), ("UnknownError", .unknownError),
        ("HTTP 403", .httpStatus(403)), ("HTTP 204", .httpStatus(204)), ("HTTP 302", .httpStatus(302)),
    ]

    @Test func everyReasonRoundTripsThroughItsStoredText() {
        for (text, reason) in Self.stored {
            #expect(reason.rawValue == text)
            #expect(DeliveryReason(stored: text) == reason, "\(text)")
            #expect("\(reason)" == text)
        }
        #expect(Set(Self.stored.map(\.text)).count == Self.stored.count)
        #expect(Set(Self.stored.map(\.reason)).count == Self.stored.count)
    }

    /// An error FCM may add tomorrow, or a transport failure, is kept as it came, case and all.
    @Test(arguments: [
        "SomethingNew", "NOT_FOUND", "notregistered", "NOTREGISTERED", "Not Registered", "timeout", "reset",
        "no answer", "Couldn't resolve host name", "", "HTTP", "HTTP ", "HTTP 0403", "HTTP +403", "HTTP 403 ",
        "HTTP x", "http 403", "HTTP  403",
    ])
    func otherTextIsKeptVerbatim(_ text: String) {
        let reason = DeliveryReason(stored: text)
        #expect(reason == .other(text))
        #expect(reason.rawValue == text)
    }
}
