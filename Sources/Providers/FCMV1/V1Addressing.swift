import Ingest

/// FCM HTTP v1 addresses every target but a Web Push subscription.
struct V1Addressing: DeviceTokenRules {
    let providerName = "FCM HTTP v1"
    let provider = FCMV1Definition.name

    func refusal(of message: IncomingMessage, app: String) -> APIError? {
        subscriptionRefusal(message, app: app)
    }
}
