import OAuth
import Queue

extension ProviderKind {
    /// Why `message` cannot go out through this provider, or nil: refused at ingest with 400 rather than
    /// dead-lettered later. FCM legacy has no FIDs and no web push block; APNs and Web Push address devices only
    /// (no topics, conditions or FIDs); Web Push sends only to subscriptions, only to endpoints `endpoints` takes,
    /// and only Web Push can.
    func refusal(of message: IncomingMessage, app: String, endpoints: EndpointPolicy) -> APIError? {
        let addressed = switch message.target {
        case .topic: "a topic"
        case .condition: "a condition"
        default: message.tokenField == .fid ? "a Firebase Installation ID" : nil
        }
        switch self {
        case .fcmV1:
            return Self.subscriptionRefusal(message, app: app, provider: "FCM HTTP v1")
        case .fcmLegacy:
            if message.format == .v1, message.tokenField == .fid {
                return V1MessageValidator.invalid("Invalid value at 'message.fid': app \"\(app)\" delivers over "
                    + "FCM legacy, which cannot address a Firebase Installation ID; use an fcm-v1 app.")
            }
            if message.format == .v1, message.payload["webpush"] != nil {
                return V1MessageValidator.invalid("Invalid value at 'message.webpush': app \"\(app)\" delivers "
                    + "over FCM legacy, which has no web push block; use an fcm-v1 app.")
            }
            return Self.subscriptionRefusal(message, app: app, provider: "FCM legacy")
        case .hms where message.tokenField == .fid:
            return .invalidParameters("app \"\(app)\" delivers over HMS Push Kit, which cannot address a Firebase "
                + "Installation ID: send to HMS tokens, topics, conditions or users")
        case .hms:
            return Self.subscriptionRefusal(message, app: app, provider: "HMS Push Kit")
        case .apns:
            if let addressed {
                return .invalidParameters("app \"\(app)\" delivers over APNs, which cannot address "
                    + "\(addressed): send to device tokens or users")
            }
            return Self.subscriptionRefusal(message, app: app, provider: "APNs")
        case .webPush:
            if let addressed {
                return .invalidParameters("app \"\(app)\" delivers over Web Push, which cannot address "
                    + "\(addressed): send to subscriptions or users")
            }
            guard case .tokens(let tokens) = message.target else { return nil }
            for (index, token) in tokens.enumerated() {
                guard let subscription = WebPushSubscription(token: token) else {
                    return .invalidParameters("app \"\(app)\" delivers over Web Push: its targets are subscriptions "
                        + "(\"subscription\": {...}, or a token a PUT /v1/subscriptions returned); target "
                        + "\(index + 1) is not one")
                }
                if let refusal = endpoints.refusal(of: subscription) {
                    return .invalidParameters(tokens.count == 1 ? refusal : "target \(index + 1): \(refusal)")
                }
            }
            return nil
        }
    }

    /// Why `token` cannot be registered for `app`, or nil: a Web Push app's tokens are subscriptions (registered with
    /// `PUT /v1/subscriptions`), and a subscription belongs to a Web Push app — the rule `refusal(of:app:)` applies
    /// to messages, applied to the registry.
    func registrationRefusal(of token: String, app: String, endpoints: EndpointPolicy) -> APIError? {
        let subscription = WebPushSubscription(token: token)
        switch (self, subscription != nil) {
        case (.webPush, false):
            return .invalidParameters("app \"\(app)\" delivers over Web Push: register its subscriptions with "
                + "PUT /v1/subscriptions (PushSubscription.toJSON())")
        case (.webPush, true):
            return subscription.flatMap(endpoints.refusal(of:)).map(APIError.invalidParameters)
        case (.fcmLegacy, true), (.fcmV1, true), (.apns, true), (.hms, true):
            return .invalidParameters("app \"\(app)\" delivers over \(rawValue); subscriptions register with an app "
                + "whose provider is \"webpush\"")
        default:
            return nil
        }
    }

    /// A subscription sent to an app of another provider.
    private static func subscriptionRefusal(_ message: IncomingMessage, app: String, provider: String) -> APIError? {
        guard case .tokens(let tokens) = message.target,
              tokens.contains(where: { WebPushSubscription(token: $0) != nil })
        else { return nil }
        return .invalidParameters("app \"\(app)\" delivers over \(provider); a Web Push subscription needs an app "
            + "whose provider is \"webpush\"")
    }
}
