/// The database cannot give what Herald's guarantees rest on (WAL, a `synchronous` level, a matching schema).
public struct DatabaseRequirementError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(description: String) { self.description = description }

    /// Throws unless the schema is exactly this binary's, on any engine: `version` is the database's (0: never
    /// migrated), `latest` this binary's, `location` the database as a message names it. For every command but
    /// `migrate` and `serve`: a newer herald must not upgrade the schema under an older `serve` that is still
    /// running, and an older one must not work on a schema it does not know.
    public static func requireSchema(version current: Int, latest latestVersion: Int, location path: String) throws {
        if current == 0 {
            throw DatabaseRequirementError(
                description: "\(path) has no Herald schema; run `herald migrate --db \(path)` first")
        }
        if current < latestVersion {
            throw DatabaseRequirementError(
                description: "\(path) has schema version \(current) but this herald needs \(latestVersion); "
                    + "run `herald migrate --db \(path)` with this herald first (and then restart `herald serve`)")
        }
        if current > latestVersion {
            throw DatabaseRequirementError(
                description: "\(path) has schema version \(current), newer than this herald's \(latestVersion); "
                    + "upgrade herald (downgrades are not supported)")
        }
    }
}
