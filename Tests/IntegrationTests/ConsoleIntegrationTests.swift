import Foundation
import Testing

/// The console's API against a real `herald serve`: the same figures and changes as the CLI, the tokens and the
/// same-origin rule enforced, a refused request changing nothing. (The page itself is driven in a real browser by
/// `scripts/console-browser-test`.)
@Suite struct ConsoleIntegrationTests {
    private static let admin = ["Authorization": "Bearer admin-token"]
    private static let looker = ["Authorization": "Bearer look-token"]

    /// A serve with three dead letters (two InvalidRegistration-like, one with HTML in its token) and app `default`
    /// paused afterwards, so what a test requeues stays queued where it can be seen.
    private func start() async throws -> (HeraldProcess, messageID: String) {
        let herald = try HeraldProcess(arguments: [
            "--sandbox", "--api-token", "admin-token", "--console-read-only-token", "look-token",
        ])
        let body = #"{"registration_ids": ["invalid-a", "invalid-b", "invalid-<b>x</b>", "ok-1"]}"#
        let reply = try await herald.request("POST", "/v1/messages", body: body, headers: Self.admin)
        let id = try #require(reply.json["id"] as? String)
        _ = try await herald.waitUntilSettled(id, headers: Self.admin)
        let pause = try await herald.request(
            "POST", "/v1/admin/apps/default/pause", body: #"{"reason": "<i>bad</i> deploy"}"#, headers: Self.admin)
        #expect(pause.status == 200 && pause.json["changed"] as? Bool == true)
        return (herald, id)
    }

    /// The tokens of the dead letters, as `herald dead list` reads them from the database.
    private func deadTokens(_ herald: HeraldProcess) throws -> Set<String> {
        let list = try runHerald(["dead", "list", "--db", herald.databasePath, "--json"])
        let letters = (try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])?[
            "dead_letters"] as? [[String: Any]] ?? []
        return Set(letters.compactMap { $0["token"] as? String })
    }

    @Test func theOverviewAndTheDeadLettersShowWhatTheDatabaseHolds() async throws {
        let (herald, messageID) = try await start()
        defer { herald.stop() }
        let overview = try await herald.request("GET", "/v1/admin/overview", headers: Self.looker)
        #expect(overview.status == 200 && overview.headers["cache-control"] == "no-store")
        let apps = try #require(overview.json["apps"] as? [[String: Any]])
        let app = try #require(apps.first { $0["app"] as? String == "default" })
        #expect(app["dead"] as? Int == 3 && app["state"] as? String == "paused")
        #expect(app["pause_reason"] as? String == "<i>bad</i> deploy" && app["provider"] as? String == "fcm-v1")
        #expect((app["last_hour"] as? [[String: Int]])?.count == 60)
        #expect((app["last_hour"] as? [[String: Int]])?.reduce(0) { $0 + ($1["delivered"] ?? 0) } == 1)

        // Key-set pages: two, then one, then none; each dead letter once.
        var tokens: [String] = []
        var after: String?
        repeat {
            let query = "/v1/admin/dead?limit=2" + (after.map { "&after=\($0)" } ?? "")
            let page = try await herald.request("GET", query, headers: Self.looker)
            tokens += (page.json["dead_letters"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
            after = page.json["next"] as? String
        } while after != nil
        #expect(Set(tokens) == ["invalid-a", "invalid-b", "invalid-<b>x</b>"] && tokens.count == 3)

        let byToken = try await herald.request(
            "GET", "/v1/admin/dead?token=invalid-%3Cb%3Ex%3C%2Fb%3E", headers: Self.looker)
        let letter = try #require((byToken.json["dead_letters"] as? [[String: Any]])?.first)
        let shown = try await herald.request("GET", "/v1/admin/dead/\(letter["delivery_id"] as? Int ?? 0)",
                                             headers: Self.looker)
        #expect((shown.json["message"] as? [String: Any])?["id"] as? String == messageID)
        let summary = try await herald.request("GET", "/v1/admin/dead/summary?since=1h", headers: Self.looker)
        #expect(summary.json["total"] as? Int == 3)
        let message = try await herald.request("GET", "/v1/admin/messages/\(messageID)", headers: Self.looker)
        #expect((message.json["deliveries"] as? [Any])?.count == 4)
        #expect(try await herald.request("GET", "/v1/admin/overview").status == 401)
        #expect(try await herald.request("GET", "/v1/admin/nope", headers: Self.admin).status == 404)
    }

    @Test func refusedChangesChangeNothingAndAllowedOnesGoInChunks() async throws {
        let (herald, _) = try await start()
        defer { herald.stop() }
        let all = #"{"filter": {"app": "default"}}"#
        let refusals: [(headers: [String: String], status: Int)] = [
            ([:], 401), (Self.looker, 403),
            (Self.admin.merging(["Origin": "http://evil.example"]) { $1 }, 403),
            (Self.admin.merging(["Sec-Fetch-Site": "cross-site"]) { $1 }, 403),
        ]
        for refusal in refusals {
            let reply = try await herald.request("POST", "/v1/admin/dead/requeue", body: all, headers: refusal.headers)
            #expect(reply.status == refusal.status, "\(refusal.headers)")
            #expect(try await herald.request("POST", "/v1/admin/dead/purge", body: all, headers: refusal.headers)
                .status == refusal.status)
        }
        #expect(try deadTokens(herald).count == 3, "a refused request changed something")
        #expect(try await herald.request("POST", "/v1/admin/apps/default/resume", headers: Self.looker).status == 403)

        // All that match, a chunk of one per request, looping on `until` as the page does.
        var requeued = 0
        var until: Int?
        for _ in 0..<10 {
            var filter = #""app": "default""#
            if let until { filter += #", "until": \#(until)"# }
            let chunk = try await herald.request(
                "POST", "/v1/admin/dead/requeue", body: #"{"filter": {\#(filter)}, "limit": 1}"#,
                headers: Self.admin.merging(["Origin": herald.baseURL.absoluteString.trimmingSuffix("/")]) { $1 })
            #expect(chunk.status == 200)
            requeued += chunk.json["requeued"] as? Int ?? 0
            until = chunk.json["until"] as? Int
            if chunk.json["done"] as? Bool == true { break }
        }
        #expect(requeued == 3)
        #expect(try deadTokens(herald).isEmpty)
        let depth = try runHerald(["status", "--db", herald.databasePath, "--json"])
        #expect(depth.stdout.contains(#""queued":3"#))
    }
}

extension ConsoleIntegrationTests {
    @Test func withoutAnAPITokenTheConsoleNeedsNoLoginButStillRefusesOtherSites() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox"])
        defer { herald.stop() }
        let session = try await herald.request("GET", "/v1/admin/session")
        #expect(session.status == 200 && session.json["role"] as? String == "admin")
        #expect(session.json["login_required"] as? Bool == false)
        let crossSite = try await herald.request(
            "POST", "/v1/admin/apps/default/pause", body: "{}", headers: ["Origin": "http://evil.example"])
        #expect(crossSite.status == 403)
        let status = try runHerald(["status", "--db", herald.databasePath, "--json"])
        #expect(status.stdout.contains(#""paused":false"#), "a refused pause paused the app")
    }

    @Test func serveRefusesAReadOnlyTokenThatMeansNothing() throws {
        let directory = HeraldProcess.makeDirectory()
        let db = directory.appendingPathComponent("herald.db").path
        let alone = try runHerald(["serve", "--sandbox", "--db", db, "--console-read-only-token", "look"])
        #expect(alone.status != 0 && alone.stderr.contains("--console-read-only-token needs --api-token"))
        let same = try runHerald([
            "serve", "--sandbox", "--db", db, "--api-token", "same", "--console-read-only-token", "same",
        ])
        #expect(same.status != 0 && same.stderr.contains("must differ from --api-token"))
        #expect(!same.stderr.contains("same\n") && !same.stderr.contains(": same"), "the token is not echoed")
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
