/// What a per-tenant API token may do (SPEC §22), each only for the apps it names; everything else needs the admin
/// token (`serve --api-token`).
public enum APITokenRole: String, Sendable, CaseIterable {
    /// Send messages (every ingest dialect) and cancel them.
    case send
    /// Register, look up and delete device tokens and Web Push subscriptions.
    case register
    /// Read message status and the feeds (token events, outcomes).
    case read
}
