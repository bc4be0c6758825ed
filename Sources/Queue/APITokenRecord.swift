/// One per-tenant API token as `api_tokens` keeps it (SPEC §22): never its secret, only the secret's SHA-256.
public struct APITokenRecord: Sendable, Equatable {
    /// Public, shown by `herald api-tokens list` and inside the secret itself (`hrld_<id>_…`): 12 hex digits.
    public var id: String
    /// The SHA-256 of the whole secret, as 64 lowercase hex digits.
    public var secretSHA256: String
    /// An operator's label (a team, a service), or nil.
    public var name: String?
    public var role: APITokenRole
    /// The apps it acts for, at least one, in the order given.
    public var apps: [String]
    public var createdAt: Int64
    /// When `serve` last let a request in with it, written a few seconds late (uses are gathered, not written one
    /// by one); nil when never.
    public var lastUsedAt: Int64?
    /// When it was revoked; nil while it works.
    public var revokedAt: Int64?

    public init(
        id: String, secretSHA256: String, name: String?, role: APITokenRole, apps: [String], createdAt: Int64,
        lastUsedAt: Int64? = nil, revokedAt: Int64? = nil
    ) {
        (self.id, self.secretSHA256, self.name, self.role, self.apps) = (id, secretSHA256, name, role, apps)
        (self.createdAt, self.lastUsedAt, self.revokedAt) = (createdAt, lastUsedAt, revokedAt)
    }

    /// `apps` as the `apps` column holds it: the names joined by commas (an app name has none).
    public var storedApps: String { apps.joined(separator: ",") }

    /// The `apps` column read back.
    public static func apps(stored: String) -> [String] {
        stored.split(separator: ",").map(String.init)
    }
}
