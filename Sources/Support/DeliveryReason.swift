/// Why a delivery ended, or why its last attempt failed: the `reason` of `deliveries` and `token_events`
/// (SPEC §4). The classifier produces it, the queue's rules act on it, the engines store its `rawValue`.
///
/// A case names each reason the queue's rules and every provider share (FCM legacy's codes, which the rules were
/// written in, and Herald's own); `.other` keeps any other text verbatim — a provider's own code, as its folder names
/// it (`DeliveryReason.v1(.quotaExceeded)` is `.other("QUOTA_EXCEEDED")`), an error Herald has no rule for, a
/// transport failure — so nothing a provider says is lost, and no provider is named here. The stored texts are what
/// users script against (`herald dead list --reason`, the `dead_letters` view): `rawValue` must never change one,
/// and no provider's code may be the text of a case here (`ProviderListTests` checks every provider's).
///
/// ```swift
/// DeliveryReason(stored: "InvalidRegistration")   // .invalidRegistration
/// DeliveryReason(stored: "SomethingNew")          // .other("SomethingNew")
/// ```
///
/// It lives in Support because two stages speak it without knowing each other: Classify writes it, Storage
/// applies it.
public enum DeliveryReason: Hashable, Sendable {
    // MARK: FCM legacy errors with a rule (SPEC §6)

    /// The token is gone: the delivery is dropped and the token deleted. Also FCM v1's `UNREGISTERED`, and what
    /// a claim drops a delivery to a token FCM reported gone with.
    case notRegistered
    case invalidRegistration
    case mismatchSenderID
    case invalidPackageName
    case missingRegistration
    case messageTooBig
    case invalidDataKey
    case invalidTTL
    case invalidParameters
    case invalidJSON
    case unavailable
    case internalServerError
    case deviceMessageRateExceeded
    case topicsMessageRateExceeded
    case invalidAPNsCredential

    // MARK: Herald's own

    /// The TTL ran out before the message could be sent.
    case expired
    case maxAttempts
    /// A newer message with the same `collapse_key` to the same token superseded it before sending.
    case collapsed
    /// A duplicate after a canonical-id merge: the same message already targets the new token.
    case replaced
    /// An operator or the backend cancelled the message.
    case cancelled
    /// FCM named a canonical token (a `token_events` reason).
    case canonicalID
    /// The reply is not the shape FCM promises for the request.
    case invalidResponse
    /// A multicast reply whose `results` do not pair with the targets sent.
    case mismatchedResults
    case deviceGroupPartialFailure
    /// HTTP 401 to a legacy request: the server key was refused.
    case unauthorized
    /// An error code too long or too strange to store.
    case unknownError
    /// An HTTP status that FCM's contract does not describe (`HTTP 403`).
    case httpStatus(Int)
    /// A Web Push endpoint's host is an address the app may not send to (SPEC §19): nothing was connected to.
    case forbiddenAddress

    /// Any other text, verbatim: a provider's own code — those it has a rule for are named in its folder
    /// (`V1Code`, `APNsCode`) and made with `init(stored:)` — a code Herald has no rule for, or a transport failure
    /// (`timeout`, `reset`, …). Never the text of another case: build it from text with `init(stored:)`.
    case other(String)

    // MARK: - The stored text

    /// The text stored in `deliveries.reason` and `token_events.reason`.
    public var rawValue: String {
        switch self {
        case .notRegistered: "NotRegistered"
        case .invalidRegistration: "InvalidRegistration"
        case .mismatchSenderID: "MismatchSenderId"
        case .invalidPackageName: "InvalidPackageName"
        case .missingRegistration: "MissingRegistration"
        case .messageTooBig: "MessageTooBig"
        case .invalidDataKey: "InvalidDataKey"
        case .invalidTTL: "InvalidTtl"
        case .invalidParameters: "InvalidParameters"
        case .invalidJSON: "InvalidJson"
        case .unavailable: "Unavailable"
        case .internalServerError: "InternalServerError"
        case .deviceMessageRateExceeded: "DeviceMessageRateExceeded"
        case .topicsMessageRateExceeded: "TopicsMessageRateExceeded"
        case .invalidAPNsCredential: "InvalidApnsCredential"
        case .expired: "Expired"
        case .maxAttempts: "MaxAttempts"
        case .collapsed: "Collapsed"
        case .replaced: "Replaced"
        case .cancelled: "Cancelled"
        case .canonicalID: "CanonicalId"
        case .invalidResponse: "InvalidResponse"
        case .mismatchedResults: "MismatchedResults"
        case .deviceGroupPartialFailure: "DeviceGroupPartialFailure"
        case .unauthorized: "Unauthorized"
        case .unknownError: "UnknownError"
        case .httpStatus(let status): "HTTP \(status)"
        case .forbiddenAddress: "ForbiddenAddress"
        case .other(let text): text
        }
    }

    /// The reason whose `rawValue` is `text`: a named case when one has that text exactly (case-sensitive, as FCM
    /// spells it), else `.other(text)`. `DeliveryReason(stored: text).rawValue == text` for every text.
    public init(stored text: String) {
        if let named = Self.named[text] {
            self = named
        } else if text.hasPrefix("HTTP "), let status = Int(text.dropFirst(5)), "HTTP \(status)" == text {
            self = .httpStatus(status)
        } else {
            self = .other(text)
        }
    }

    /// Every case without a payload, by its stored text.
    private static let named: [String: DeliveryReason] = {
        let fixed: [DeliveryReason] = [
            .notRegistered, .invalidRegistration, .mismatchSenderID, .invalidPackageName, .missingRegistration,
            .messageTooBig, .invalidDataKey, .invalidTTL, .invalidParameters, .invalidJSON, .unavailable,
            .internalServerError, .deviceMessageRateExceeded, .topicsMessageRateExceeded, .invalidAPNsCredential,
            .expired, .maxAttempts, .collapsed, .replaced, .cancelled, .canonicalID, .invalidResponse,
            .mismatchedResults, .deviceGroupPartialFailure, .unauthorized, .unknownError, .forbiddenAddress,
        ]
        return Dictionary(uniqueKeysWithValues: fixed.map { ($0.rawValue, $0) })
    }()
}

extension DeliveryReason: CustomStringConvertible {
    public var description: String { rawValue }
}
