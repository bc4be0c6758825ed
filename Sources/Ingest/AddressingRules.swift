import OAuth
import Queue

/// What an app's provider can address, asked at ingest before anything is stored: a message it cannot carry, or a
/// token it cannot register, is refused with 400 rather than dead-lettered later. Each provider's folder gives its
/// own (`ProviderDefinition`); ingest never names a provider.
public protocol AddressingRules: Sendable {
    /// Why `message` cannot go out through this provider to app `app`, or nil.
    func refusal(of message: IncomingMessage, app: String) -> APIError?
    /// Why `token` cannot be registered for `app`, or nil.
    func registrationRefusal(of token: String, app: String) -> APIError?
}

/// The rules of a provider that sends to device tokens: a Web Push subscription (which ingest reads from any
/// message's `subscription` target and `PUT /v1/subscriptions`) belongs to a Web Push app, never to it.
public protocol DeviceTokenRules: AddressingRules {
    /// The provider as a message's refusal names it: "FCM legacy".
    var providerName: String { get }
    /// Its `"provider"` in the config file, as a registration's refusal names it: "fcm-legacy".
    var provider: String { get }
}

extension DeviceTokenRules {
    public func registrationRefusal(of token: String, app: String) -> APIError? {
        guard WebPushSubscription(token: token) != nil else { return nil }
        return .invalidParameters("app \"\(app)\" delivers over \(provider); subscriptions register with an "
            + "app whose provider is \"webpush\"")
    }

    /// A subscription among `message`'s targets.
    public func subscriptionRefusal(_ message: IncomingMessage, app: String) -> APIError? {
        guard case .tokens(let tokens) = message.target,
              tokens.contains(where: { WebPushSubscription(token: $0) != nil })
        else { return nil }
        return .invalidParameters("app \"\(app)\" delivers over \(providerName); a Web Push subscription needs an app "
            + "whose provider is \"webpush\"")
    }
}

extension IncomingMessage {
    /// What a provider that sends to devices only cannot address: "a topic", "a condition", "a Firebase
    /// Installation ID", or nil when the message targets tokens or users.
    public var nonDeviceTarget: String? {
        switch target {
        case .topic: "a topic"
        case .condition: "a condition"
        default: tokenField == .fid ? "a Firebase Installation ID" : nil
        }
    }
}
