import Ingest

/// APNs addresses devices only (SPEC §15): no topics, conditions or FIDs, and no Web Push subscriptions.
struct APNsAddressing: DeviceTokenRules {
    let providerName = "APNs"
    let provider = APNsDefinition.name

    func refusal(of message: IncomingMessage, app: String) -> APIError? {
        if let addressed = message.nonDeviceTarget {
            return .invalidParameters("app \"\(app)\" delivers over APNs, which cannot address "
                + "\(addressed): send to device tokens or users")
        }
        return subscriptionRefusal(message, app: app)
    }
}
