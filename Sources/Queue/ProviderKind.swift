/// Which protocol an app's pushes go out in: `"provider"` in the config file, read from its text once where the
/// configuration is parsed, and compared as a value after — by the engine that builds the app's sender, and by
/// ingest, which refuses what the app's provider cannot address.
public enum ProviderKind: String, Sendable, CaseIterable {
    /// FCM's legacy HTTP API, with a server key.
    case fcmLegacy = "fcm-legacy"
    /// FCM HTTP v1, with a service account's OAuth2 access tokens.
    case fcmV1 = "fcm-v1"
    /// Apple's Push Notification service directly, with an ES256 provider token (SPEC §15).
    case apns
    /// Browsers' push services directly, each message encrypted to its subscription and signed with VAPID (SPEC §16).
    case webPush = "webpush"
    /// HMS Push Kit: Huawei devices without Google's services, with OAuth client credentials (SPEC §21).
    case hms
}
