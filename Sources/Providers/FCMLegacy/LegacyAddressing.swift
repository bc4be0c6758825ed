import Ingest

/// What FCM legacy cannot address (SPEC §13): a Firebase Installation ID, a v1 message's web push block, a Web Push
/// subscription.
struct LegacyAddressing: DeviceTokenRules {
    let providerName = "FCM legacy"
    let provider = FCMLegacyDefinition.name

    func refusal(of message: IncomingMessage, app: String) -> APIError? {
        if message.format == .v1, message.tokenField == .fid {
            return V1MessageValidator.invalid("Invalid value at 'message.fid': app \"\(app)\" delivers over "
                + "FCM legacy, which cannot address a Firebase Installation ID; use an fcm-v1 app.")
        }
        if message.format == .v1, message.payload["webpush"] != nil {
            return V1MessageValidator.invalid("Invalid value at 'message.webpush': app \"\(app)\" delivers "
                + "over FCM legacy, which has no web push block; use an fcm-v1 app.")
        }
        return subscriptionRefusal(message, app: app)
    }
}
