import FCMV1
import Support
import Testing

@Suite struct V1CodeTests {
    /// Every v1 code with a rule, by the text stored for it today (SPEC §12). Users script against these: a row that
    /// fails here means a stored value changed.
    static let stored: [(text: String, code: V1Code)] = [
        ("UNREGISTERED", .unregistered), ("SENDER_ID_MISMATCH", .senderIDMismatch),
        ("INVALID_ARGUMENT", .invalidArgument), ("QUOTA_EXCEEDED", .quotaExceeded),
        ("RESOURCE_EXHAUSTED", .resourceExhausted), ("UNAVAILABLE", .unavailable), ("INTERNAL", .internal),
        ("UNSPECIFIED_ERROR", .unspecifiedError), ("DEADLINE_EXCEEDED", .deadlineExceeded), ("ABORTED", .aborted),
        ("THIRD_PARTY_AUTH_ERROR", .thirdPartyAuthError), ("APNS_AUTH_ERROR", .apnsAuthError),
        ("PERMISSION_DENIED", .permissionDenied), ("UNAUTHENTICATED", .unauthenticated),
    ]

    @Test func everyCodeIsStoredAsItsOwnText() {
        for (text, code) in Self.stored {
            #expect(DeliveryReason.v1(code).rawValue == text)
            #expect(DeliveryReason(stored: text) == .v1(code), "\(text)")
        }
        #expect(Set(Self.stored.map(\.code)) == Set(V1Code.allCases), "a code is missing from the table")
    }
}
