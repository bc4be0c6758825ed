import Support

/// What one target of a request became: the reconciler's instruction for that delivery (SPEC §1, §6).
///
/// Reasons are FCM's error names as returned, or Herald's own (`.invalidResponse`, `.mismatchedResults`,
/// `.deviceGroupPartialFailure`, `.unauthorized`, `.httpStatus(403)`, a transport failure's description).
public enum Outcome: Sendable, Equatable {
    /// FCM accepted the message. `canonicalToken` is the result's `registration_id`: the registry must move the
    /// token there.
    case delivered(fcmMessageID: String?, canonicalToken: String?)
    /// `NotRegistered`: the delivery is dropped and the token deleted from the registry.
    case notRegistered
    /// APNs 410: the token is no longer valid since `since` (Apple's `timestamp`, Unix ms, when given): the delivery
    /// is dropped and the token deleted — unless it was registered again after that time, which Apple could not know.
    case unregistered(reason: DeliveryReason, since: Int64?)
    /// APNs' `BadDeviceToken` / `DeviceTokenNotForTopic`: the token can never work for this app, so this delivery is
    /// dead and the token deleted (FCM's invalid tokens only make dead letters).
    case invalidToken(reason: DeliveryReason)
    /// The token can never receive this sender's messages (`InvalidRegistration`, `MismatchSenderId`,
    /// `InvalidPackageName`, `MissingRegistration`): this delivery is dead.
    case deadToken(reason: DeliveryReason)
    /// The message itself is wrong (`MessageTooBig`, `InvalidDataKey`, `InvalidTtl`, a 400): no target of it can
    /// succeed, including targets of the same message in other requests.
    case deadMessage(reason: DeliveryReason)
    /// Try again after the backoff; counts as an attempt.
    case retry(reason: DeliveryReason)
    /// A rate limit (`DeviceMessageRateExceeded`, `TopicsMessageRateExceeded`): retry on the slow lane.
    case retrySlow(reason: DeliveryReason)
    /// The sender's credentials are wrong (401, `InvalidApnsCredential`): pause the app; attempts are not charged.
    case pauseApp(reason: DeliveryReason)
    /// A push service refused the sender's signature for this subscription (Web Push 401, 403): the delivery waits,
    /// uncharged, until its origin's gate opens again; an origin that refuses several subscriptions in a row is
    /// paused (SPEC §19). Never the app's pause: any browser's push service can answer this.
    case senderRefused(reason: DeliveryReason)
    /// Back to `queued` at once without charging an attempt and without pausing: the answer was about the
    /// sender's credentials, which the provider renews before sending again (FCM v1's first 401 `UNAUTHENTICATED`).
    case requeue(reason: DeliveryReason)
}
