/// An app stored in the database (SPEC §22): its `apps` entry without the secrets, and each secret sealed.
public struct AppDefinitionRecord: Sendable, Equatable {
    public var name: String
    /// `"provider"`: `fcm-v1`.
    public var provider: String
    /// The entry's JSON text without its secrets.
    public var definition: String
    /// A JSON object's text: secret field → its sealed text (`hs1:<key id>:…`).
    public var secrets: String
    /// Grows with every change of the row, a removal included.
    public var version: Int64
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        name: String, provider: String, definition: String, secrets: String, version: Int64 = 0, createdAt: Int64,
        updatedAt: Int64
    ) {
        (self.name, self.provider, self.definition, self.secrets) = (name, provider, definition, secrets)
        (self.version, self.createdAt, self.updatedAt) = (version, createdAt, updatedAt)
    }
}
