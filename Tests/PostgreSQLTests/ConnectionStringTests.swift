import Testing

@testable import PostgreSQL

/// What may reach a log line or an error body from a connection string: never its password.
@Suite struct ConnectionStringTests {
    @Test(arguments: [
        ("postgresql://herald:s3cret@db:5432/herald", "postgresql://herald:***@db:5432/herald"),
        ("postgres://herald:s3cret@db/herald?sslmode=require", "postgres://herald:***@db/herald?sslmode=require"),
        ("postgresql://db/herald?user=h&password=s3cret&sslmode=verify-full",
         "postgresql://db/herald?user=h&password=***&sslmode=verify-full"),
        ("postgresql://herald@db/herald", "postgresql://herald@db/herald"),
        ("postgresql://db:5432/herald", "postgresql://db:5432/herald"),
        ("postgresql://herald:p%40ss@db/herald", "postgresql://herald:***@db/herald"),
        ("host=db password=s3cret dbname=herald", "host=db password=*** dbname=herald"),
        // libpq's quoting: single quotes, with \' and \\ inside.
        ("host=db password = 'it\\'s a \\\\ secret' user=herald", "host=db password = *** user=herald"),
        ("host=db user=herald", "host=db user=herald"),
    ])
    func redactsEveryPassword(url: String, expected: String) {
        #expect(PGConnectionString.redacted(url) == expected)
    }

    @Test func secretsIncludeThePercentDecodedPassword() {
        let secrets = PGConnectionString.secrets(in: "postgresql://herald:p%40ss@db/herald")
        #expect(secrets.contains("p%40ss"))
        #expect(secrets.contains("p@ss"))
    }

    @Test func libpqMessagesThatQuoteThePasswordAreScrubbed() {
        // libpq quotes a malformed password back: `invalid percent-encoded token: "top%zzsecret"`.
        let error = #expect(throws: PGError.self) {
            try PGConnection(url: "postgresql://herald:top%zzsecret@127.0.0.1:1/herald")
        }
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("invalid percent-encoded token"), "\(text)")
        #expect(!text.contains("zzsecret"), "leaks the password: \(text)")
    }

    @Test(arguments: [
        ("postgres://db/herald", true), ("postgresql://db/herald", true), ("PostgreSQL://db/herald", true),
        ("herald.db", false), ("/var/lib/herald/herald.db", false), ("postgres.db", false),
    ])
    func tellsPostgreSQLFromASQLitePath(text: String, isPostgreSQL: Bool) {
        #expect(PGConnectionString.isPostgreSQL(text) == isPostgreSQL)
    }
}
