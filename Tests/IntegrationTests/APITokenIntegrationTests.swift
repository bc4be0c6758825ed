import Foundation
import PostgreSQL
import PostgreSQLTestSupport
import Testing

/// Per-tenant API tokens (SPEC §22) with the real `herald serve` and `herald api-tokens`: made by the CLI, honoured in
/// every ingest dialect, revoked from the CLI (and from the admin API of one of two instances on PostgreSQL) and then
/// refused; `last_used_at` written; the secret in neither the database nor the log.
@Suite(.serialized) struct APITokenIntegrationTests {
    static let admin = "admin-token-of-the-test"

    /// `herald api-tokens create` on `database`: the token's JSON, its secret among it.
    func create(_ database: String, _ arguments: [String]) throws -> [String: Any] {
        let made = try runHerald(["api-tokens", "create", "--db", database, "--json"] + arguments)
        #expect(made.status == 0, "\(made.stderr)")
        return (try JSONSerialization.jsonObject(with: Data(made.stdout.utf8))) as? [String: Any] ?? [:]
    }

    /// Asks `herald` with the token until it answers 401: a revocation made elsewhere reaches it within seconds.
    func waitUntilRefused(_ herald: HeraldProcess, _ secret: String) async throws {
        for _ in 0..<600 {
            let reply = try await herald.request(
                "GET", "/v1/token-events", headers: ["Authorization": "Bearer " + secret])
            if reply.status == 401 { return }
            #expect(reply.status == 200)
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the revoked token was still honoured")
    }

    @Test func aTokenFromTheCLIWorksInEveryDialectForItsAppOnlyUntilRevoked() async throws {
        let directory = HeraldProcess.makeDirectory()
        let database = directory.appendingPathComponent("herald.db").path
        #expect(try runHerald(["migrate", "--db", database]).status == 0)
        #expect(try runHerald(["pause", "default", "--db", database]).status == 0)
        let unknown = try runHerald(["api-tokens", "create", "--apps", "nope", "--db", database])
        #expect(unknown.status == 1 && unknown.stderr.contains("no app named \"nope\""))
        let sender = try create(database, ["--apps", "default", "--name", "backend"])
        let reader = try create(database, ["--apps", "default", "--role", "read"])
        let secret = try #require(sender["secret"] as? String)
        let readSecret = try #require(reader["secret"] as? String)
        let herald = try HeraldProcess(directory: directory, arguments: ["--sandbox", "--api-token", Self.admin])
        let bearer = ["Authorization": "Bearer " + secret]

        let posted = try await herald.request("POST", "/v1/messages", body: #"{"to": "a"}"#, headers: bearer)
        #expect(posted.status == 202)
        let legacy = try await herald.request(
            "POST", "/fcm/send", body: #"{"to": "b"}"#, headers: ["Authorization": "key=" + secret])
        #expect(legacy.status == 200)
        let v1 = try await herald.request(
            "POST", "/v1/projects/any/messages:send", body: #"{"message": {"token": "c"}}"#, headers: bearer)
        #expect(v1.status == 200, "\(v1.text)")
        let elsewhere = try await herald.request(
            "POST", "/v1/messages", body: #"{"to": "d", "app": "ios"}"#, headers: bearer)
        #expect(elsewhere.status == 403)
        let id = try #require(posted.json["id"] as? String)
        #expect(try await herald.request("GET", "/v1/messages/\(id)", headers: bearer).status == 403)
        let status = try await herald.request("GET", "/v1/messages/\(id)",
                                              headers: ["Authorization": "Bearer " + readSecret])
        #expect(status.status == 200)
        #expect(try await herald.request("GET", "/v1/admin/overview", headers: bearer).status == 403)

        // last_used_at reaches the database a few seconds after the requests.
        var used: Any?
        for _ in 0..<600 where used == nil || used is NSNull {
            let list = try runHerald(["api-tokens", "list", "--db", database, "--json"])
            let tokens = (try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])?[
                "api_tokens"] as? [[String: Any]] ?? []
            used = tokens.first { $0["id"] as? String == sender["id"] as? String }?["last_used_at"]
            if used == nil || used is NSNull { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(used is NSNumber)

        let revoked = try runHerald(["api-tokens", "revoke", try #require(reader["id"] as? String), "--db", database])
        #expect(revoked.status == 0, "\(revoked.stderr)")
        try await waitUntilRefused(herald, readSecret)
        #expect(herald.stop() == 0)
        #expect(!herald.log.contains(secret) && !herald.log.contains(readSecret))
        for file in ["herald.db", "herald.db-wal"] {
            let bytes = (try? Data(contentsOf: directory.appendingPathComponent(file))) ?? Data()
            #expect(bytes.range(of: Data(secret.utf8)) == nil && bytes.range(of: Data(readSecret.utf8)) == nil)
        }
    }

    @Test func onPostgreSQLARevocationOnOneInstanceHoldsOnTheOther() async throws {
        let database = try TestDatabase()
        #expect(try runHerald(["migrate", "--db", database.url]).status == 0)
        #expect(try runHerald(["pause", "default", "--db", database.url]).status == 0)
        let made = try create(database.url, ["--apps", "default", "--role", "read"])
        let secret = try #require(made["secret"] as? String)
        let id = try #require(made["id"] as? String)
        let stored = try database.connect().queryOne(
            "SELECT secret_sha256 FROM api_tokens WHERE id = $1", [.text(id)]) { $0.string(0) }
        #expect(stored?.count == 64)
        let arguments = ["--sandbox", "--api-token", Self.admin]
        let first = try HeraldProcess(database: database.url, arguments: arguments)
        let second = try HeraldProcess(database: database.url, arguments: arguments)
        let bearer = ["Authorization": "Bearer " + secret]
        #expect(try await first.request("GET", "/v1/token-events", headers: bearer).status == 200)
        #expect(try await second.request("GET", "/v1/token-events", headers: bearer).status == 200)
        let revoked = try await first.request(
            "DELETE", "/v1/admin/api-tokens/\(id)", headers: ["Authorization": "Bearer " + Self.admin])
        #expect(revoked.status == 200)
        // On the instance that took it: from the next request; on the other, once it reads the table again.
        #expect(try await first.request("GET", "/v1/token-events", headers: bearer).status == 401)
        try await waitUntilRefused(second, secret)
        #expect(first.stop() == 0)
        #expect(second.stop() == 0)
        #expect(!first.log.contains(secret) && !second.log.contains(secret))
    }
}
