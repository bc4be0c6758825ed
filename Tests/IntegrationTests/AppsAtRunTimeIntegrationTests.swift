import Foundation
import PostgreSQLTestSupport
import Testing

/// Apps and their credentials changed while `serve` runs (SPEC §22): added through the API, its key rotated with
/// `herald apps set`, removed, while a stream of messages flows — none lost, none failed, none sent twice, the new
/// credential in use without a restart; on SQLite, and with two instances on one PostgreSQL database (the change
/// taken by one, applied by the other). The secret is never in the database's bytes nor in an answer.
@Suite(.serialized) struct AppsAtRunTimeIntegrationTests {
    static let oldKey = "old-server-key-SECRET-7f3a9c"
    static let newKey = "new-server-key-SECRET-b41e02"

    /// Where the test runs: its directory (secrets key, entries), the database and the instances.
    struct Rig {
        var directory: URL
        var database: String
        var keyFile: String
        var instances: [HeraldProcess]
    }

    func rig(postgres: Bool) throws -> (Rig, TestDatabase?) {
        let directory = HeraldProcess.makeDirectory()
        let keyFile = directory.appendingPathComponent("secrets.key").path
        let made = try runHerald(["secrets-key", "--out", keyFile])
        #expect(made.status == 0, "\(made.stderr)")
        let pg = postgres ? try TestDatabase() : nil
        let database = pg?.url ?? directory.appendingPathComponent("herald.db").path
        // No app configured: the database brings them.
        let count = postgres ? 2 : 1
        let instances = try (0..<count).map { _ in
            try HeraldProcess(
                directory: directory, database: database,
                arguments: ["--secrets-key-file", keyFile, "--lease", "5s"])
        }
        return (Rig(directory: directory, database: database, keyFile: keyFile, instances: instances), pg)
    }

    static func entry(key: String, endpoint: String) -> String {
        #"{"provider": "fcm-legacy", "server_key": "\#(key)", "endpoint": "\#(endpoint)", "concurrency": 4}"#
    }

    @Test(arguments: [false, true])
    func addRotateAndRemoveWhileMessagesFlow(postgres: Bool) async throws {
        // Each simulator takes only its own key: a request with the other one would be 401 (and pause the app).
        let before = try SimulatorProcess(["--server-key", Self.oldKey])
        let after = try SimulatorProcess(["--server-key", Self.newKey])
        // Slow answers from the first: requests are in flight on its connections when the key changes.
        try await before.control(#"{"slow_rate": 1.0, "slow_ms": 300}"#)
        let (rig, pg) = try rig(postgres: postgres)
        _ = pg
        let first = rig.instances[0], last = rig.instances[rig.instances.count - 1]

        // Unknown until added.
        #expect(try await last.request("POST", "/v1/messages", body: #"{"app": "stream", "to": "t"}"#).status == 400)
        let added = try await first.request(
            "PUT", "/v1/admin/apps/stream", body: Self.entry(key: Self.oldKey, endpoint: before.endpoint))
        #expect(added.status == 201, "\(added.text)")
        #expect(!added.text.contains(Self.oldKey))
        #expect((added.json["server_key"] as? [String: Any])?["sha256"] != nil, "\(added.text)")

        // Every other instance applies it within seconds: from then on it takes messages for the app.
        var probes: [String] = []
        for herald in rig.instances {
            try await waitFor("every instance to know the app") {
                let reply = try await herald.request(
                    "POST", "/v1/messages", body: #"{"app": "stream", "to": "tok-probe-\#(probes.count)"}"#)
                if let id = reply.json["id"] as? String { probes.append(id) }
                return reply.status == 202
            }
        }
        // The stream: one message at a time, alternating instances, each accepted (202).
        let stream = Stream(rig.instances)
        let sending = Task { try await stream.run() }
        try await waitFor("the first app's deliveries") { try await before.requests().count >= 20 }

        // Rotation through the CLI, the other way to change an app: every instance picks it up.
        let entryFile = rig.directory.appendingPathComponent("stream.json")
        try Data(Self.entry(key: Self.newKey, endpoint: after.endpoint).utf8).write(to: entryFile)
        let set = try runHerald([
            "apps", "set", "stream", "--file", entryFile.path, "--db", rig.database, "--secrets-key-file", rig.keyFile,
        ])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(!set.stdout.contains(Self.newKey) && !set.stderr.contains(Self.newKey))
        let sentBefore = try await after.requests().count
        try await waitFor("the new credential in use") { try await after.requests().count >= sentBefore + 20 }
        // Messages taken by each instance after the change go out with the new key.
        let afterChange = await stream.count
        try await waitFor("messages of both instances after the change") {
            await stream.count >= afterChange + 10 * rig.instances.count
        }
        // The old connections closed once their requests were answered: none cancelled.
        for herald in rig.instances {
            try await waitFor("the old connections to close") {
                herald.logLines.contains { $0["msg"] as? String == "sender pool stopped" }
            }
            let stopped = herald.logLines.filter { $0["msg"] as? String == "sender pool stopped" }
            #expect(stopped.allSatisfy { $0["pool"] as? String == "send-stream" && $0["cancelled"] as? Int == 0 },
                    "\(stopped)")
        }
        await stream.stop()
        let ids = try await sending.value + probes

        // None lost, none failed, none sent twice.
        for id in ids {
            let settled = HeraldProcess.summary(try await first.waitUntilSettled(id))
            #expect(settled.values.allSatisfy { $0 == "delivered - 1 -" }, "\(id): \(settled)")
        }
        var sends: [String: Int] = [:]
        for simulator in [before, after] {
            for request in try await simulator.requests() {
                #expect(request["status"] as? Int == 200, "\(request)")
                for token in request["tokens"] as? [String] ?? [] { sends[token, default: 0] += 1 }
            }
        }
        #expect(sends.count == ids.count)
        #expect(sends.filter { $0.value != 1 }.isEmpty, "sent twice: \(sends.filter { $0.value != 1 })")

        // Never a secret in an answer, nor in clear in the database.
        for herald in rig.instances {
            let listed = try await herald.request("GET", "/v1/admin/apps")
            #expect(listed.status == 200 && listed.text.contains("\"stream\""), "\(listed.text)")
            #expect(!listed.text.contains(Self.oldKey) && !listed.text.contains(Self.newKey))
        }
        if !postgres {
            for suffix in ["", "-wal"] {
                let bytes = (try? Data(contentsOf: URL(fileURLWithPath: rig.database + suffix))) ?? Data()
                for key in [Self.oldKey, Self.newKey] {
                    #expect(bytes.range(of: Data(key.utf8)) == nil, "\(key) in clear in herald.db\(suffix)")
                }
            }
        } else if let pg {
            let stored = try pg.connect().query("SELECT coalesce(secrets, '') || coalesce(definition, '') FROM apps") {
                $0.string(0)
            }.joined()
            #expect(stored.contains("hs1:") && !stored.contains(Self.oldKey) && !stored.contains(Self.newKey))
        }

        // Removed: refused by every instance once applied; what was queued stays.
        #expect(try await last.request("DELETE", "/v1/admin/apps/stream").status == 200)
        try await waitFor("every instance to forget the app") {
            for herald in rig.instances {
                let reply = try await herald.request("POST", "/v1/messages", body: #"{"app": "stream", "to": "t"}"#)
                if reply.status != 400 { return false }
            }
            return true
        }
        #expect(try await first.request("DELETE", "/v1/admin/apps/stream").status == 404)
        for herald in rig.instances { #expect(herald.stop() == 0) }
    }

    @Test func aChangeIsCheckedBeforeItIsStored() async throws {
        let directory = HeraldProcess.makeDirectory()
        let configFile = directory.appendingPathComponent("herald.json")
        try Data(#"{"apps": [{"name": "fixed", "provider": "fcm-legacy", "server_key": "k"}]}"#.utf8)
            .write(to: configFile)
        // Without a secrets key: the config's app runs, a stored secret is refused with the way to make a key.
        let herald = try HeraldProcess(directory: directory, arguments: ["--config", configFile.path])
        let noKey = try await herald.request(
            "PUT", "/v1/admin/apps/other", body: #"{"provider": "fcm-legacy", "server_key": "k2"}"#)
        #expect(noKey.status == 400 && noKey.text.contains("herald secrets-key"), "\(noKey.text)")
        let readOnly = try await herald.request(
            "PUT", "/v1/admin/apps/fixed", body: #"{"provider": "fcm-legacy", "server_key": "k2"}"#)
        #expect(readOnly.status == 409, "\(readOnly.text)")
        #expect(try await herald.request("DELETE", "/v1/admin/apps/fixed").status == 409)
        let badKey = try await herald.request(
            "PUT", "/v1/admin/apps/ios2",
            body: #"{"provider": "apns", "key": "not a key", "key_id": "ABCDEFGHIJ", "team_id": "T", "topic": "t"}"#)
        #expect(badKey.status == 400 && badKey.text.contains("P-256"), "\(badKey.text)")
        let listed = try await herald.request("GET", "/v1/admin/apps")
        #expect(listed.text.contains(#""source":"config""#) && !listed.text.contains("ios2"), "\(listed.text)")
        #expect(herald.stop() == 0)
    }

    @Test func theAppsCommandsStoreSealedAndShowNoSecret() throws {
        let directory = HeraldProcess.makeDirectory()
        let database = directory.appendingPathComponent("herald.db").path
        let keyFile = directory.appendingPathComponent("secrets.key").path
        #expect(try runHerald(["migrate", "--db", database]).status == 0)
        #expect(try runHerald(["secrets-key", "--out", keyFile]).status == 0)
        let entry = directory.appendingPathComponent("entry.json").path
        try Data(#"{"provider": "fcm-legacy", "server_key": "\#(Self.oldKey)"}"#.utf8)
            .write(to: URL(fileURLWithPath: entry))

        let noKey = try runHerald(["apps", "add", "a1", "--file", entry, "--db", database])
        #expect(noKey.status == 1 && noKey.stderr.contains("herald secrets-key --out"), "\(noKey.stderr)")
        let add = ["apps", "add", "a1", "--file", entry, "--db", database, "--secrets-key-file", keyFile]
        let added = try runHerald(add)
        #expect(added.status == 0, "\(added.stderr)")
        let twice = try runHerald(add)
        #expect(twice.status == 1 && twice.stderr.contains("herald apps set"), "\(twice.stderr)")
        for command in [["apps", "show", "a1"], ["apps", "show", "a1", "--json"], ["apps", "list", "--json"],
                        ["status", "--json"]] {
            let shown = try runHerald(command + ["--db", database])
            #expect(shown.status == 0 && shown.stdout.contains("a1"), "\(command): \(shown.stderr)")
            #expect(!shown.stdout.contains(Self.oldKey), "\(command) shows the secret")
        }
        #expect(try runHerald(["apps", "show", "a1", "--json", "--db", database]).stdout.contains("sha256"))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: database))
            + ((try? Data(contentsOf: URL(fileURLWithPath: database + "-wal"))) ?? Data())
        #expect(bytes.range(of: Data(Self.oldKey.utf8)) == nil)
        #expect(try runHerald(["apps", "remove", "a1", "--db", database]).status == 0)
        #expect(try runHerald(["apps", "remove", "a1", "--db", database]).status == 1)
    }

    /// Waits (bounded, generously: the machine may be loaded) until `condition` holds.
    func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        Issue.record("timed out waiting for \(what)")
    }
}

/// Posts messages to app `stream`, one at a time, to each instance in turn, until stopped; returns their ids.
private actor Stream {
    private let instances: [HeraldProcess]
    private var ids: [String] = []
    private var stopped = false

    init(_ instances: [HeraldProcess]) { self.instances = instances }

    var count: Int { ids.count }

    func stop() { stopped = true }

    func run() async throws -> [String] {
        while !stopped {
            let herald = instances[ids.count % instances.count]
            let reply = try await herald.request(
                "POST", "/v1/messages", body: #"{"app": "stream", "to": "tok-\#(ids.count)"}"#)
            #expect(reply.status == 202, "\(reply.text)")
            guard let id = reply.json["id"] as? String else { break }
            ids.append(id)
        }
        return ids
    }
}
