import Testing

@testable import PostgreSQL

/// What may reach a log line or an error body from a connection string: never its password, whatever its characters
/// and whichever form the string takes (SPEC §20).
@Suite struct ConnectionStringTests {
    @Test(arguments: [
        ("postgresql://herald:s3cret@db:5432/herald", "user=herald password=*** dbname=herald host=db port=5432"),
        ("postgres://herald:s3cret@db/herald?sslmode=require",
         "user=herald password=*** dbname=herald host=db sslmode=require"),
        ("postgresql://db/herald?user=h&password=s3cret&sslmode=verify-full",
         "user=h password=*** dbname=herald host=db sslmode=verify-full"),
        ("postgresql://herald@db/herald", "user=herald dbname=herald host=db"),
        ("postgresql://herald:p%40ss%2Fw%3Fo%23rd%25@db/herald", "user=herald password=*** dbname=herald host=db"),
        ("postgresql://herald:pa?ss#wo%20rd@db/herald", "user=herald password=*** dbname=herald host=db"),
        ("host=db password=s3cret dbname=herald", "password=*** dbname=herald host=db"),
        // libpq's quoting: single quotes, with \' and \\ inside.
        ("host=db password = 'it\\'s a \\\\ secret' user=herald", "user=herald password=*** host=db"),
        ("host=db sslpassword=keypass sslmode=require", "host=db sslmode=require sslpassword=***"),
        ("host=db user='a b'", "user='a b' host=db"),
    ])
    func showsWhatLibpqReadsWithEverySecretMasked(text: String, expected: String) {
        #expect(PGConnectionString.redacted(text) == expected)
        #expect(PGConnectionString.problem(in: text) == nil)
    }

    @Test(arguments: [
        // The password's characters that libpq would take for the end of the user information.
        "postgresql://herald:zq7/xk9@db/herald", "postgresql://herald:12/zq7xk9@db/herald",
        "postgresql://herald:zq7@xk9@db/herald", "postgresql://herald:zq7/xk9?x@db/herald",
        // What libpq cannot read at all, and quotes back.
        "postgresql://herald:zq7%zzxk9@db/herald", "host=db password=zq7 xk9", "password='zq7xk9 host=db",
        "host=db password=x PASSWORD=zq7xk9",
    ])
    func aStringLibpqWouldMisreadIsRefusedWithoutShowingIt(text: String) throws {
        let problem = try #require(PGConnectionString.problem(in: text))
        for shown in [problem, PGConnectionString.redacted(text)] {
            #expect(!shown.contains("zq7") && !shown.contains("xk9"), "\(shown)")
        }
        #expect(PGConnectionString.secrets(in: text).isEmpty)
        let error = #expect(throws: PGError.self) { try PGConnection(url: text, connectTimeoutSeconds: 1) }
        #expect(error?.isTransient == false, "not worth retrying: \(String(describing: error))")
        #expect(error.map { "\($0)" }?.contains("zq7") == false)
    }

    @Test func secretsAreTheValuesLibpqWillUse() {
        #expect(PGConnectionString.secrets(in: "postgresql://herald:p%40ss@db/herald") == ["p@ss"])
        #expect(Set(PGConnectionString.secrets(in: "password='a b' sslpassword=c host=db")) == ["a b", "c"])
        #expect(PGConnectionString.secrets(in: "postgresql://herald@db/herald").isEmpty)
    }

    @Test func aSecretIsMaskedWhereverElseItShows() {
        // A password that is also the user's name: showing the user would show the password.
        #expect(PGConnectionString.redacted("postgresql://herald:herald@db/app")
                    == "user=*** password=*** dbname=app host=db")
    }

    @Test(arguments: [
        ("postgres://db/herald", true), ("postgresql://db/herald", true), ("PostgreSQL://db/herald", true),
        ("host=db dbname=q password=x", true), ("dbname=herald", true), ("  hostaddr = 10.0.0.1", true),
        ("user=herald", true), ("port=5433", true), ("service=herald", true), ("password=x", true),
        ("herald.db", false), ("/var/lib/herald/herald.db", false), ("postgres.db", false), ("./host=x", false),
        ("/tmp/host=x", false), ("hostname=db", false), ("HOST=db", false), ("host", false), ("=x", false),
    ])
    func tellsPostgreSQLFromASQLitePath(text: String, isPostgreSQL: Bool) {
        #expect(PGConnectionString.isPostgreSQL(text) == isPostgreSQL)
    }
}
