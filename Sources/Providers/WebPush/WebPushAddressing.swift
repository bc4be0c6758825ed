import Ingest
import OAuth

/// Web Push sends only to subscriptions (SPEC §16), only to endpoints `endpoints` takes (SPEC §19), and a
/// subscription registers only with a Web Push app.
struct WebPushAddressing: AddressingRules {
    var endpoints: EndpointPolicy

    func refusal(of message: IncomingMessage, app: String) -> APIError? {
        if let addressed = message.nonDeviceTarget {
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

    func registrationRefusal(of token: String, app: String) -> APIError? {
        guard let subscription = WebPushSubscription(token: token) else {
            return .invalidParameters("app \"\(app)\" delivers over Web Push: register its subscriptions with "
                + "PUT /v1/subscriptions (PushSubscription.toJSON())")
        }
        return endpoints.refusal(of: subscription).map(APIError.invalidParameters)
    }
}
