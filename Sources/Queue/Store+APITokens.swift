/// The per-tenant API tokens' rules, the same on every engine.
extension Store {
    /// Stores a new token after checking that every app it names is one this database knows (an `apps` row:
    /// `serve` has run with it configured, or it has had messages). Call inside a write transaction.
    public func createAPIToken(_ token: APITokenRecord) throws {
        let unknown = try token.apps.filter { try appState($0) == nil }
        guard unknown.isEmpty else { throw UnknownAppsError(apps: unknown) }
        try insertAPIToken(token)
    }
}

/// An API token named apps the database does not know.
public struct UnknownAppsError: Error, CustomStringConvertible {
    public var apps: [String]

    public var description: String {
        "no app named " + apps.map { "\"\($0)\"" }.joined(separator: ", ")
            + " in this database (an app is known once serve has run with it configured)"
    }
}
