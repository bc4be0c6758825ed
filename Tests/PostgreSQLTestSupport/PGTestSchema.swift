import Foundation
import PostgreSQL

/// A schema of its own for one test in the test server's database, migrated, and dropped when released. Its
/// connections find the tables through `search_path`, set in the connection string.
public final class PGTestSchema {
    public let name: String
    public let url: String
    private let serverURL: String

    public init() throws {
        serverURL = try TestServer.url()
        name = "herald_store_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let separator = serverURL.contains("?") ? "&" : "?"
        url = serverURL + separator + "options=-csearch_path%3D" + name
        let admin = try PGConnection(url: serverURL)
        try admin.execute("CREATE SCHEMA \(name)")
        try PGMigrator.migrate(try connect())
    }

    deinit {
        if let admin = try? PGConnection(url: serverURL) {
            _ = try? admin.execute("DROP SCHEMA IF EXISTS \(name) CASCADE")
        }
    }

    public func connect() throws -> PGConnection { try PGConnection(url: url) }
}
