/// Which protocol an app's pushes go out in: `"provider"` in the config file, read from its text once where the
/// configuration is parsed, and compared as a value after.
enum ProviderKind: String, Sendable {
    /// FCM's legacy HTTP API, with a server key.
    case fcmLegacy = "fcm-legacy"
    /// FCM HTTP v1, with a service account's OAuth2 access tokens.
    case fcmV1 = "fcm-v1"
    /// Apple's Push Notification service directly, with an ES256 provider token (SPEC §15).
    case apns
}
