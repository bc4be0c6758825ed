import Support

/// Apple's `reason` strings the APNs table acts on, as Apple spells them. (Its `InternalServerError` is the
/// legacy case of the same text.)
public enum APNsCode: String, Sendable, CaseIterable {
    case unregistered = "Unregistered"
    case expiredToken = "ExpiredToken"
    case badDeviceToken = "BadDeviceToken"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case missingDeviceToken = "MissingDeviceToken"
    case badCollapseID = "BadCollapseId"
    case badExpirationDate = "BadExpirationDate"
    case badMessageID = "BadMessageId"
    case badPriority = "BadPriority"
    case badPushType = "InvalidPushType"
    case duplicateHeaders = "DuplicateHeaders"
    case payloadEmpty = "PayloadEmpty"
    case payloadTooLarge = "PayloadTooLarge"
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case missingTopic = "MissingTopic"
    case badTopic = "BadTopic"
    case topicDisallowed = "TopicDisallowed"
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case expiredProviderToken = "ExpiredProviderToken"
    case tooManyRequests = "TooManyRequests"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case idleTimeout = "IdleTimeout"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"
}

extension DeliveryReason {
    /// The reason stored for `code`: its text, verbatim (`.other`, as every provider's own code).
    public static func apns(_ code: APNsCode) -> DeliveryReason {
        DeliveryReason(stored: code.rawValue)
    }
}
