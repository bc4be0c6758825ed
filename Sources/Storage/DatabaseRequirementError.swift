import Queue

/// The database cannot give what Herald's guarantees rest on (WAL, a `synchronous` level, a matching schema).
public struct DatabaseRequirementError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(description: String) { self.description = description }

    static let walHint = "Herald needs WAL: a database file on a local filesystem with shared-memory support"
}
