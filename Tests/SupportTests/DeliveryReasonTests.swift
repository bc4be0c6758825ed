import Support
import Testing

@Suite struct DeliveryReasonTests {
    /// Every reason with a case, by the text stored for it today (SPEC §4, §6, §12). Users script against these:
    /// a row that fails here means a stored value changed.
    static let stored: [(text: String, reason: DeliveryReason)] = [
        ("NotRegistered", .notRegistered), ("InvalidRegistration", .invalidRegistration),
        ("MismatchSenderId", .mismatchSenderID), ("InvalidPackageName", .invalidPackageName),
        ("MissingRegistration", .missingRegistration), ("MessageTooBig", .messageTooBig),
        ("InvalidDataKey", .invalidDataKey), ("InvalidTtl", .invalidTTL), ("InvalidParameters", .invalidParameters),
        ("InvalidJson", .invalidJSON), ("Unavailable", .unavailable), ("InternalServerError", .internalServerError),
        ("DeviceMessageRateExceeded", .deviceMessageRateExceeded),
        ("TopicsMessageRateExceeded", .topicsMessageRateExceeded), ("InvalidApnsCredential", .invalidAPNsCredential),
        ("UNREGISTERED", .v1(.unregistered)), ("SENDER_ID_MISMATCH", .v1(.senderIDMismatch)),
        ("INVALID_ARGUMENT", .v1(.invalidArgument)), ("QUOTA_EXCEEDED", .v1(.quotaExceeded)),
        ("RESOURCE_EXHAUSTED", .v1(.resourceExhausted)), ("UNAVAILABLE", .v1(.unavailable)),
        ("INTERNAL", .v1(.internal)), ("UNSPECIFIED_ERROR", .v1(.unspecifiedError)),
        ("DEADLINE_EXCEEDED", .v1(.deadlineExceeded)), ("ABORTED", .v1(.aborted)),
        ("THIRD_PARTY_AUTH_ERROR", .v1(.thirdPartyAuthError)), ("APNS_AUTH_ERROR", .v1(.apnsAuthError)),
        ("PERMISSION_DENIED", .v1(.permissionDenied)), ("UNAUTHENTICATED", .v1(.unauthenticated)),
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

    @Test func everyV1CodeHasItsOwnText() {
        for code in DeliveryReason.V1Code.allCases {
            #expect(DeliveryReason(stored: code.rawValue) == .v1(code))
            #expect(Self.stored.contains { $0.reason == .v1(code) }, "\(code.rawValue) is missing from the table")
        }
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
