import Support

/// HMS Push Kit's result codes (`code` in `{"code", "msg", "requestId"}`) that Herald acts on, as Huawei writes them.
/// The code is the reason Herald stores (SPEC §4): `herald dead list --reason 80300008` finds what Huawei's error
/// table calls that code, the way an FCM or APNs reason is stored as the provider spells it.
public enum HMSCode: String, Sendable, CaseIterable {
    case success = "80000000"
    /// Some tokens were refused: `msg` is a JSON string naming them (`illegal_tokens`).
    case partialSuccess = "80100000"
    case invalidParameter = "80100001"
    case invalidMessageStructure = "80100003"
    case ttlBeforeNow = "80100004"
    case invalidCollapseKey = "80100013"
    /// The access token is missing, malformed or another app's.
    case oauthAuthenticationError = "80200001"
    case oauthTokenExpired = "80200003"
    /// The app may not send (Push Kit not enabled, or a wrong `app_id`).
    case noPermission = "80300002"
    /// Every token of the request was refused.
    case allTokensInvalid = "80300007"
    /// The message without its tokens is over 4096 bytes.
    case messageTooBig = "80300008"
    case invalidTokenCount = "80300010"
    case highUrgencyNotAllowed = "80300011"
    case oauthServerError = "80600003"
    case internalError = "81000001"

    /// The reason stored for a delivery that ended, or last failed, with this code.
    public var reason: DeliveryReason { DeliveryReason(stored: rawValue) }
}
