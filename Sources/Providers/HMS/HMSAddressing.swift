import Ingest

/// HMS Push Kit addresses tokens, topics, conditions and users, but neither a Firebase Installation ID nor a Web Push
/// subscription.
struct HMSAddressing: DeviceTokenRules {
    let providerName = "HMS Push Kit"
    let provider = HMSDefinition.name

    func refusal(of message: IncomingMessage, app: String) -> APIError? {
        guard message.tokenField != .fid else {
            return .invalidParameters("app \"\(app)\" delivers over HMS Push Kit, which cannot address a Firebase "
                + "Installation ID: send to HMS tokens, topics, conditions or users")
        }
        return subscriptionRefusal(message, app: app)
    }
}
