import Foundation
import PostgreSQL
import PostgreSQLTestSupport
import Testing

/// Several `herald serve` on one PostgreSQL database (SPEC §14): one queue, ingest on any instance, delivery by all,
/// nothing sent twice, nothing lost when one is killed; and the commands on `--db postgres://`.
@Suite(.serialized) struct PostgresIntegrationTests {
    static let serverKey = "sim-key-SECRET-postgres"

    func serve(
        _ database: TestDatabase, _ simulator: SimulatorProcess, _ extra: [String] = [], lease: String = "2s"
    ) throws -> HeraldProcess {
        try HeraldProcess(database: database.url, arguments: [
            "--fcm-key", Self.serverKey, "--fcm-endpoint", simulator.endpoint, "--lease", lease,
        ] + extra)
    }

    /// Token → how many requests the simulator received for it.
    func sends(_ simulator: SimulatorProcess) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for request in try await simulator.requests() {
            for token in request["tokens"] as? [String] ?? [] { counts[token, default: 0] += 1 }
        }
        return counts
    }

    func delivered(by herald: HeraldProcess) async throws -> Double {
        let metrics = try MetricsIntegrationTests.parse(try await herald.request("GET", "/metrics").text)
        return metrics[#"herald_deliveries_total{app="default",outcome="delivered"}"#] ?? 0
    }

    @Test func twoInstancesShareOneQueueAndSendEveryDeliveryOnce() async throws {
        let database = try TestDatabase()
        let simulator = try SimulatorProcess()
        try await simulator.control(#"{"slow_rate": 1.0, "slow_ms": 20}"#)
        let first = try serve(database, simulator, ["--concurrency", "4"])
        let second = try serve(database, simulator, ["--concurrency", "4"])
        var ids: [String] = []
        for index in 0..<200 {
            let herald = index.isMultiple(of: 2) ? first : second
            let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-\#(index)"}"#)
            #expect(reply.status == 202)
            ids.append(try #require(reply.json["id"] as? String))
        }
        // Each instance writes on two connections, the delivery engine's and ingest's, named for pg_stat_activity.
        let writers = try database.connect().query(
            """
            SELECT application_name FROM pg_stat_activity
            WHERE datname = current_database() AND application_name IN ('herald-writer', 'herald-ingest')
            ORDER BY 1
            """) { $0.string(0) }
        #expect(writers == ["herald-ingest", "herald-ingest", "herald-writer", "herald-writer"])
        for (index, id) in ids.enumerated() {
            // Read from the instance that did not ingest it: the queue is one.
            let reader = index.isMultiple(of: 2) ? second : first
            let settled = HeraldProcess.summary(try await reader.waitUntilSettled(id))
            #expect(settled == ["tok-\(index)": "delivered - 1 -"], "\(id)")
        }
        let counts = try await sends(simulator)
        #expect(counts.count == 200)
        #expect(counts.filter { $0.value != 1 }.isEmpty, "sent more than once: \(counts.filter { $0.value != 1 })")
        let (byFirst, bySecond) = (try await delivered(by: first), try await delivered(by: second))
        #expect(byFirst + bySecond == 200)
        #expect(byFirst > 0 && bySecond > 0, "one instance sent everything: \(byFirst) + \(bySecond)")
        // /fcm/send's multicast_id is the message's number, as on SQLite.
        let multicast = try await first.request(
            "POST", "/fcm/send", body: #"{"registration_ids": ["m-1", "m-2"]}"#,
            headers: ["Authorization": "key=anything"])
        let number = try #require(multicast.json["multicast_id"] as? Int, "\(multicast.text)")
        let named = try database.connect().queryOne(
            "SELECT id FROM messages WHERE rowid = $1", [.integer(Int64(number))]) { $0.string(0) }
        #expect(named != nil && multicast.text.contains(named ?? "?"), "\(multicast.text)")
        #expect(first.stop() == 0)
        #expect(second.stop() == 0)
    }

    @Test func killingOneInstanceLosesNothingAndTheOtherTakesItsLeases() async throws {
        let database = try TestDatabase()
        let simulator = try SimulatorProcess()
        try await simulator.control(#"{"slow_rate": 1.0, "slow_ms": 400}"#)
        let doomed = try serve(database, simulator, ["--concurrency", "8"])
        var ids: [String] = []
        for index in 0..<60 {
            let reply = try await doomed.request("POST", "/v1/messages", body: #"{"to": "tok-\#(index)"}"#)
            ids.append(try #require(reply.json["id"] as? String))
        }
        for _ in 0..<400 where try await simulator.requests().isEmpty { try await Task.sleep(nanoseconds: 25_000_000) }
        doomed.stop(signal: SIGKILL)
        let killedAt = Int(Date().timeIntervalSince1970 * 1000)
        // Started after the kill: the leases it finds are the dead instance's, and only expiry gives them back.
        try await simulator.control(#"{"slow_rate": 0}"#)
        let survivor = try serve(database, simulator)
        for (index, id) in ids.enumerated() {
            let settled = HeraldProcess.summary(try await survivor.waitUntilSettled(id))
            #expect(settled["tok-\(index)"]?.hasPrefix("delivered") == true, "\(id): \(settled)")
        }
        // Every token went out; the only ones that went twice were on the wire (or answered, not yet recorded)
        // when the instance died: once before the kill, once after.
        var before: [String: Int] = [:]
        var after: [String: Int] = [:]
        for request in try await simulator.requests() {
            let at = request["at"] as? Int ?? 0
            for token in request["tokens"] as? [String] ?? [] {
                if at < killedAt { before[token, default: 0] += 1 } else { after[token, default: 0] += 1 }
            }
        }
        #expect(Set(before.keys).union(after.keys).count == 60, "a token was never sent")
        #expect(before.values.allSatisfy { $0 == 1 } && after.values.allSatisfy { $0 == 1 }, "\(before) \(after)")
        #expect(survivor.stop() == 0)
    }

    @Test func losingTheDatabaseMidRunAnswers503AndDeliveryResumesWithoutLossOrDuplicates() async throws {
        let database = try TestDatabase()
        let simulator = try SimulatorProcess()
        try await simulator.control(#"{"slow_rate": 1.0, "slow_ms": 1000}"#)
        let herald = try serve(database, simulator, ["--concurrency", "2"], lease: "2m")
        var ids: [String] = []
        for index in 0..<30 {
            let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-\#(index)"}"#)
            #expect(reply.status == 202)
            ids.append(try #require(reply.json["id"] as? String))
        }
        for _ in 0..<400 where try await simulator.requests().isEmpty { try await Task.sleep(nanoseconds: 25_000_000) }
        // FCM holds its answers (the process stopped) while the database goes away, so the requests at FCM now are
        // answered during the outage however slowly this test gets here.
        kill(simulator.process.processIdentifier, SIGSTOP)
        defer { kill(simulator.process.processIdentifier, SIGCONT) }  // should the test end early

        // The database goes away: no new session may start, and Herald's are ended.
        let admin = try PGConnection(url: try TestServer.url())
        try admin.execute("ALTER DATABASE \(database.name) ALLOW_CONNECTIONS false")
        try admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database.name)'")
        var refused: HeraldProcess.Reply?
        for _ in 0..<200 where refused == nil {
            let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-outage"}"#)
            if reply.status == 503 { refused = reply } else { try await Task.sleep(nanoseconds: 25_000_000) }
        }
        kill(simulator.process.processIdentifier, SIGCONT)
        let outage = try #require(refused, "ingest never answered 503 while the database was away")
        #expect(outage.headers["retry-after"] != nil)
        #expect(!outage.text.contains(Self.password(in: database.url)), "\(outage.text)")
        // Answers that came back while the database was away are kept and written afterwards, not sent again.
        let keptAnswers = {
            herald.logLines.contains { ($0["msg"] as? String)?.hasPrefix("writing outcomes failed") == true }
        }
        for _ in 0..<800 where !keptAnswers() { try await Task.sleep(nanoseconds: 25_000_000) }
        #expect(keptAnswers(), "no answer came back during the outage")
        try await simulator.control(#"{"slow_rate": 0}"#)

        try admin.execute("ALTER DATABASE \(database.name) ALLOW_CONNECTIONS true")
        for (index, id) in ids.enumerated() {
            let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
            #expect(settled == ["tok-\(index)": "delivered - 1 -"], "\(id)")
        }
        let counts = try await sends(simulator)
        #expect(counts.filter { $0.key.hasPrefix("tok-") && $0.key != "tok-outage" }.count == 30)
        #expect(counts.filter { $0.value != 1 }.isEmpty, "sent more than once: \(counts.filter { $0.value != 1 })")
        #expect(herald.logLines.contains { ($0["msg"] as? String)?.contains("lost the connection") == true })
        #expect(!herald.log.contains(Self.password(in: database.url)), "the database password reached the log")
        #expect(herald.stop() == 0)
    }

    @Test func commandsWorkOnPostgres() throws {
        let database = try TestDatabase()
        let url = database.url
        let migrate = try runHerald(["migrate", "--db", url])
        #expect(migrate.status == 0, "\(migrate.stderr)")
        #expect(!migrate.stdout.contains(Self.password(in: url)), "the password was printed")
        // serve registers its apps; without one, `send` refuses, as on SQLite.
        let simulator = try SimulatorProcess()
        let herald = try serve(database, simulator)
        #expect(herald.stop() == 0)

        #expect(try runHerald(["pause", "default", "--db", url]).status == 0)
        let added = try runHerald(["tokens", "add", "tok-a", "--user", "alice", "--db", url, "--json"])
        #expect(added.status == 0, "\(added.stderr)")
        let sent = try runHerald(["send", #"{"users": ["alice"], "data": {"k": "v"}}"#, "--db", url, "--json"])
        #expect(sent.status == 0, "\(sent.stderr)")
        let id = try #require(Self.json(sent.stdout)["id"] as? String)
        #expect(Self.json(sent.stdout)["deliveries"] as? Int == 1)

        let status = try runHerald(["status", "--db", url, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let apps = Self.json(status.stdout)["apps"] as? [[String: Any]] ?? []
        let app = try #require(apps.first { $0["app"] as? String == "default" })
        #expect(app["queued"] as? Int == 1)
        #expect(app["paused"] as? Bool == true)

        let shown = try runHerald(["message", id, "--db", url, "--json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("tok-a"))
        let listed = try runHerald(["tokens", "list", "--user", "alice", "--db", url, "--json"])
        #expect(listed.stdout.contains("tok-a"), "\(listed.stdout) \(listed.stderr)")
        #expect(try runHerald(["resume", "default", "--db", url]).status == 0)
        #expect(try runHerald(["dead", "list", "--db", url, "--json"]).status == 0)
        #expect(try runHerald(["prune", "--db", url, "--json"]).status == 0)
        #expect(try runHerald(["tokens", "delete", "tok-a", "--db", url]).status == 0)

        let backup = try runHerald(["backup", "/tmp/never-\(UUID().uuidString).db", "--db", url])
        #expect(backup.status == 1)
        #expect(backup.stderr.contains("pg_dump"), "\(backup.stderr)")

        // A wrong password: a clear error that names the server, never the password given.
        let wrong = url.replacingOccurrences(of: Self.password(in: url), with: "not-the-password-42")
        let refused = try runHerald(["status", "--db", wrong])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannot connect"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("not-the-password-42"), "\(refused.stderr)")
        let unreachable = try runHerald([
            "serve", "--db", "postgresql://herald:secret-77@127.0.0.1:1/herald?connect_timeout=2", "--sandbox",
            "--listen", "127.0.0.1:0",
        ])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("cannot connect to user=herald password=***"), "\(unreachable.stderr)")
        #expect(unreachable.stderr.contains("host=127.0.0.1 port=1"), "\(unreachable.stderr)")
        #expect(!unreachable.stderr.contains("secret-77"))
    }

    /// The password of a `postgresql://user:password@host…` URL.
    static func password(in url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url.range(of: "@") else { return "\u{0}" }
        let userInfo = url[scheme.upperBound..<at.lowerBound]
        return userInfo.split(separator: ":", maxSplits: 1).last.map(String.init) ?? "\u{0}"
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }
}
