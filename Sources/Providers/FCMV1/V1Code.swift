import Support

/// The FCM HTTP v1 error codes (`error.details[].errorCode`, else `error.status`) the v1 table acts on.
public enum V1Code: String, Sendable, CaseIterable {
    case unregistered = "UNREGISTERED"
    case senderIDMismatch = "SENDER_ID_MISMATCH"
    case invalidArgument = "INVALID_ARGUMENT"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case resourceExhausted = "RESOURCE_EXHAUSTED"
    case unavailable = "UNAVAILABLE"
    case `internal` = "INTERNAL"
    case unspecifiedError = "UNSPECIFIED_ERROR"
    case deadlineExceeded = "DEADLINE_EXCEEDED"
    case aborted = "ABORTED"
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"
    case apnsAuthError = "APNS_AUTH_ERROR"
    case permissionDenied = "PERMISSION_DENIED"
    case unauthenticated = "UNAUTHENTICATED"
}

extension DeliveryReason {
    /// The reason stored for `code`: its text, verbatim (`.other`, as every provider's own code).
    public static func v1(_ code: V1Code) -> DeliveryReason {
        DeliveryReason(stored: code.rawValue)
    }
}
