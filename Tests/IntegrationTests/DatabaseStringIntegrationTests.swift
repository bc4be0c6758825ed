import Foundation
import PostgreSQLTestSupport
import Testing

/// `--db` in each of its forms (SPEC §20) with the real `herald`: a path is SQLite, a `postgres://` URL or a libpq
/// keyword/value string is PostgreSQL, and a password — whatever its characters, in whichever form — never shows in
/// stdout, stderr, the log or a file name, libpq's own messages included.
@Suite(.serialized) struct DatabaseStringIntegrationTests {
    /// A password with every character that a URL or libpq treats specially. Wrong for the test server.
    static let password = #"zq7Wr0ng/xk9P@ss?Kw4#rd%41 sp'ce"q\b"#
    /// Pieces of it that must not show either: libpq quotes the part of a string it stumbles on.
    static let pieces = ["zq7Wr0ng", "xk9P", "Kw4", "41 sp", "A sp", "ce\"q"]

    /// The test server's host, port, user and database, from its URL.
    private func server() throws -> (host: String, port: Int, user: String, database: String) {
        let components = try #require(URLComponents(string: try TestServer.url()))
        return (components.host ?? "127.0.0.1", components.port ?? 5432, components.user ?? "herald",
                String(components.path.dropFirst()))
    }

    /// `password` in every form `--db` takes for `server`: keyword/value (quoted as libpq reads it), a URL with it
    /// percent-encoded in the user information or in the query, and a URL with it written as it is (which libpq
    /// would misread, so Herald refuses it).
    private func forms(
        _ server: (host: String, port: Int, user: String, database: String), password: String
    ) -> [String] {
        let quoted = "'" + password.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "'", with: "\\'") + "'"
        let encoded = password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let place = "\(server.host):\(server.port)/\(server.database)"
        return [
            "host=\(server.host) port=\(server.port) dbname=\(server.database) user=\(server.user) password=\(quoted)",
            "  dbname = \(server.database) host=\(server.host) port=\(server.port) user=\(server.user) password=\(quoted)",
            "postgresql://\(server.user):\(encoded)@\(place)",
            "postgres://\(server.user)@\(place)?password=\(encoded)&connect_timeout=5",
            "postgresql://\(server.user):\(password)@\(place)",
        ]
    }

    private func expectHidden(_ output: String, _ context: String) {
        #expect(!output.contains(Self.password), "\(context): the password shows:\n\(output)")
        for piece in Self.pieces {
            #expect(!output.contains(piece), "\(context): \(piece) shows:\n\(output)")
        }
    }

    @Test func aWrongPasswordInAnyFormIsRefusedAndNeverShown() throws {
        let directory = HeraldProcess.makeDirectory()
        for database in forms(try server(), password: Self.password) {
            for command in [["status"], ["migrate"], ["serve", "--sandbox", "--listen", "127.0.0.1:0"]] {
                let run = try runHerald(command + ["--db", database], directory: directory)
                #expect(run.status == 1, "\(command[0]) --db \(database): \(run.stderr)")
                #expect(run.stderr.contains("password authentication failed") || run.stderr.contains("%40"),
                        "\(command[0]) --db \(database): \(run.stderr)")
                expectHidden(run.stdout + run.stderr, "\(command[0]) --db \(database)")
            }
        }
        let made = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(made.isEmpty, "a connection string became a file: \(made)")
    }

    @Test func anUnreachableServerIsNamedWithoutThePassword() throws {
        let directory = HeraldProcess.makeDirectory()
        let unreachable = (host: "127.0.0.1", port: 1, user: "herald", database: "herald")
        for database in forms(unreachable, password: Self.password).dropLast() {
            for command in [["status"], ["serve", "--sandbox", "--listen", "127.0.0.1:0"]] {
                let run = try runHerald(command + ["--db", database], directory: directory)
                #expect(run.status == 1 && run.stderr.contains("host=127.0.0.1 port=1"), "\(run.stderr)")
                expectHidden(run.stdout + run.stderr, "\(command[0]) --db \(database)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func theKeywordValueFormReachesTheDatabase() throws {
        let database = try TestDatabase()
        let components = try #require(URLComponents(string: database.url))
        let server = try server()
        let password = components.password?.removingPercentEncoding ?? ""
        let keywordValue = forms((server.host, server.port, server.user, database.name), password: password)[0]
        let migrate = try runHerald(["migrate", "--db", keywordValue])
        #expect(migrate.status == 0, "\(migrate.stderr)")
        let status = try runHerald(["status", "--db", keywordValue, "--json"])
        #expect(status.status == 0 && status.stdout.contains(#""apps""#), "\(status.stderr)")
        for output in [migrate.stdout, migrate.stderr, status.stdout, status.stderr] where !password.isEmpty {
            #expect(!output.contains(password), "the password shows: \(output)")
        }
        #expect(migrate.stdout.contains("password=***"), "\(migrate.stdout)")
    }
}
