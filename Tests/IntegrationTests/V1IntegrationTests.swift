import Foundation
import OAuth
import Queue
import Storage
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The real `herald serve --fcm-service-account` delivering over FCM HTTP v1 to a real `herald fcm-sim
/// --service-account`, both on ephemeral loopback ports. The service account is generated for the test run: a
/// throw-away RSA key that nothing outside these processes trusts.
@Suite struct V1IntegrationTests {
    static let key = try! RSAPrivateKey.generate(bits: 2048)
    static let otherKey = try! RSAPrivateKey.generate(bits: 2048)
    static let email = "herald-test@test-project.iam.gserviceaccount.com"

    /// A simulator trusting `key`, and Herald given a key file whose `token_uri` is the simulator's.
    struct Pair {
        let simulator: SimulatorProcess
        let herald: HeraldProcess
        let keyFile: String
    }

    static func writeServiceAccount(key: RSAPrivateKey, tokenURI: String?, in directory: URL, name: String) throws
        -> String
    {
        let account = ServiceAccount(clientEmail: email, privateKey: key, projectID: "test-project",
                                     tokenURI: tokenURI, privateKeyID: "test-only-key")
        let path = directory.appendingPathComponent(name).path
        try account.json().write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    func start(heraldKey: RSAPrivateKey = key, simulatorArguments: [String] = [], paused: Bool = false,
               control: String? = nil) async throws -> Pair {
        let directory = HeraldProcess.makeDirectory()
        let simulatorFile = try Self.writeServiceAccount(key: Self.key, tokenURI: nil, in: directory, name: "sim.json")
        let simulator = try SimulatorProcess(["--service-account", simulatorFile] + simulatorArguments)
        if let control { try await simulator.control(control) }
        let base = String(simulator.endpoint.dropLast("/fcm/send".count))
        let keyFile = try Self.writeServiceAccount(key: heraldKey, tokenURI: base + "/token", in: directory,
                                                   name: "service-account.json")
        let herald = try HeraldProcess(directory: directory, arguments: [
            "--fcm-service-account", keyFile, "--fcm-endpoint", base,
        ], paused: paused)
        return Pair(simulator: simulator, herald: herald, keyFile: keyFile)
    }

    func post(_ herald: HeraldProcess, _ body: String) async throws -> String {
        let reply = try await herald.request("POST", "/v1/messages", body: body)
        return try #require(reply.json["id"] as? String, "no id in \(reply.text)")
    }

    func app(_ herald: HeraldProcess) throws -> (paused: Bool, reason: String?, gateUntil: Int64) {
        let connection = try Connection(path: herald.databasePath, mode: .readOnly)
        return try connection.queryOne("SELECT paused, pause_reason, gate_until FROM apps WHERE name = 'default'") {
            ($0.int(0) == 1, $0.optionalString(1), $0.int64(2))
        } ?? (false, nil, 0)
    }

    /// Polls (bounded) until `condition` holds for the app row.
    func waitForApp(_ herald: HeraldProcess, _ condition: ((paused: Bool, reason: String?, gateUntil: Int64)) -> Bool)
        async throws -> (paused: Bool, reason: String?, gateUntil: Int64)
    {
        var last = try app(herald)
        for _ in 0..<800 where !condition(last) {
            try await Task.sleep(nanoseconds: 25_000_000)
            last = try app(herald)
        }
        return last
    }

    /// No line of the PEM body may reach the log or the database.
    func expectKeyKeptSecret(_ pair: Pair, key: RSAPrivateKey = key) throws {
        let lines = key.pkcs8PEM().split(separator: "\n").filter { !$0.hasPrefix("-----") }
        let log = pair.herald.log
        #expect(!lines.contains { log.contains($0) }, "the private key reached the log")
        let database = try Data(contentsOf: URL(fileURLWithPath: pair.herald.databasePath))
        let text = String(decoding: database, as: UTF8.self)
        #expect(!lines.contains { text.contains($0) }, "the private key reached the database")
    }

    // MARK: - Delivery

    @Test func unregisteredDeletesTheRegistryTokenAndEmitsTheEvent() async throws {
        let pair = try await start()
        let herald = pair.herald
        for token in ["ok-1", "notreg-1"] {
            let reply = try await herald.request("PUT", "/v1/tokens/\(token)", body: #"{"app":"default","user":"u1"}"#)
            #expect(reply.status == 201)
        }
        let id = try await post(herald, #"{"users": ["u1"], "data": {"score": "4x8"}}"#)
        let message = try await herald.waitUntilSettled(id)
        #expect(HeraldProcess.summary(message) == [
            "ok-1": "delivered - 1 -", "notreg-1": "dropped NotRegistered 1 -",
        ])
        let delivered = (message["deliveries"] as? [[String: Any]] ?? []).first { $0["token"] as? String == "ok-1" }
        #expect((delivered?["fcm_message_id"] as? String)?.hasPrefix("projects/test-project/messages/") == true)

        #expect(try await herald.request("GET", "/v1/tokens/notreg-1").status == 404)
        #expect(try await herald.request("GET", "/v1/tokens/ok-1").status == 200)
        let events = try await herald.request("GET", "/v1/token-events?after=0").json["events"] as? [[String: Any]]
        #expect(events?.count == 1)
        #expect(events?.first?["token"] as? String == "notreg-1")
        #expect(events?.first?["kind"] as? String == "deleted")
        #expect(events?.first?["reason"] as? String == "NotRegistered")
        #expect(events?.first?["message_id"] as? String == id)

        let requests = try await pair.simulator.requests()
        #expect(requests.count == 2, "one v1 request per token")
        #expect(requests.allSatisfy { $0["format"] as? String == "v1" })
        #expect(herald.stop() == 0)
        try expectKeyKeptSecret(pair)
    }

    @Test func everyTargetKindAndOptionReachesFCMAsV1() async throws {
        let pair = try await start()
        let herald = pair.herald
        let ids = [
            try await post(herald, #"{"to": "tok-1", "priority": "high", "collapse_key": "ck", "time_to_live": 600,"#
                + #" "data": {"n": 7}, "notification": {"title": "t", "body": "b"}}"#),
            try await post(herald, #"{"to": "/topics/news", "dry_run": true, "data": {"a": "b"}}"#),
            try await post(herald, #"{"condition": "'a' in topics && 'b' in topics", "data": {"a": "b"}}"#),
        ]
        for id in ids {
            let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
            #expect(settled.values.allSatisfy { $0 == "delivered - 1 -" }, "\(settled)")
        }
        let requests = try await pair.simulator.requests()
        let device = try #require(requests.first { ($0["tokens"] as? [String]) == ["tok-1"] })
        #expect(device["priority"] as? String == "high")
        #expect(device["collapse_key"] as? String == "ck")
        let ttl = try #require(device["time_to_live"] as? Int)
        #expect(ttl <= 600 && ttl >= 590, "android.ttl carries the remaining TTL")
        let topic = try #require(requests.first { $0["topic"] as? String == "news" })
        #expect(topic["dry_run"] as? Bool == true, "dry_run is sent as validate_only")
        #expect(requests.contains { $0["condition"] as? String == "'a' in topics && 'b' in topics" })
    }

    @Test func legacyClientsPostingToFCMSendAreDeliveredOverV1() async throws {
        let pair = try await start()
        let reply = try fcmSend(pair.herald, #"{"registration_ids": ["a", "invalid-b"], "data": {"k": "v"}}"#)
        #expect(reply.status == 200)
        #expect(reply.json["success"] as? Int == 2, "FCM's answer to the client: both queued")
        var requests: [[String: Any]] = []
        for _ in 0..<800 where requests.count < 2 {
            try await Task.sleep(nanoseconds: 25_000_000)
            requests = try await pair.simulator.requests()
        }
        #expect(Set(requests.compactMap { ($0["tokens"] as? [String])?.first }) == ["a", "invalid-b"])
        #expect(requests.allSatisfy { $0["format"] as? String == "v1" })
        #expect(Set(requests.compactMap { $0["status"] as? Int }) == [200, 400])
    }

    // MARK: - Gate and credentials

    @Test func quotaExceededWithRetryAfterGatesTheApp() async throws {
        let pair = try await start(control: #"{"fail_next": 1, "status": 429, "retry_after": "2"}"#)
        let herald = pair.herald
        let first = try await post(herald, #"{"to": "tok-a"}"#)
        let gated = try await waitForApp(herald) { $0.gateUntil > 0 }
        let refused = try #require(try await pair.simulator.requests().first)
        #expect(refused["status"] as? Int == 429)
        let refusedAt = try #require(refused["at"] as? Int)
        #expect(gated.gateUntil >= Int64(refusedAt) + 1_900, "Retry-After: 2 closes the gate for 2 s")
        #expect(!gated.paused)

        // A message posted meanwhile waits for the gate to open.
        let second = try await post(herald, #"{"to": "tok-b"}"#)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(second))
        #expect(settled["tok-b"] == "delivered - 1 -")
        let sent = try #require(try await pair.simulator.requests().first { ($0["tokens"] as? [String]) == ["tok-b"] })
        let sentAt = try #require(sent["at"] as? Int)
        #expect(Int64(sentAt) >= gated.gateUntil, "a request reached FCM \(gated.gateUntil - Int64(sentAt)) ms early")

        // The refused delivery is retried on the slow lane FCM asks for (30–60 s after the refusal: a minute with
        // jitter), not when the gate opens, and the refused attempt is charged. A slow machine may already have
        // sent the retry by now; then it must have reached FCM no sooner than the slow lane allows.
        let slowLane = Int64(refusedAt) + 30_000
        let waiting = try await herald.request("GET", "/v1/messages/\(first)").json
        let row = try #require((waiting["deliveries"] as? [[String: Any]])?.first)
        if row["state"] as? String == "delivered" {
            #expect(row["attempts"] as? Int == 2)
            let retries = try await pair.simulator.requests().filter { ($0["tokens"] as? [String]) == ["tok-a"] }
            #expect(retries.count == 2)
            #expect(retries.last.flatMap { $0["at"] as? Int }.map { Int64($0) >= slowLane } == true)
        } else {
            #expect(row["state"] as? String == "queued")
            #expect(row["reason"] as? String == "QUOTA_EXCEEDED")
            #expect(row["attempts"] as? Int == 1)
            #expect((row["next_attempt_at"] as? Int).map { Int64($0) >= slowLane } == true)
        }
    }

    @Test func unauthenticatedRenewsTheAccessTokenOnce() async throws {
        let pair = try await start(control: #"{"unauthorized_next": 1}"#)
        let id = try await post(pair.herald, #"{"to": "tok-1"}"#)
        let settled = HeraldProcess.summary(try await pair.herald.waitUntilSettled(id))
        #expect(settled["tok-1"] == "delivered - 1 -", "the refused attempt is not charged")
        #expect(try await pair.simulator.requests().map { $0["status"] as? Int } == [401, 200])
        let oauth = try await pair.simulator.stats()["oauth"] as? [String: Int]
        #expect(oauth?["tokens_issued"] == 2, "one token at start, one renewal after the 401")
        #expect(try app(pair.herald).paused == false)
    }

    @Test func unauthenticatedAfterRenewalPausesTheApp() async throws {
        let pair = try await start(control: #"{"unauthorized_next": 2}"#)
        let herald = pair.herald
        let id = try await post(herald, #"{"to": "tok-1"}"#)
        let paused = try await waitForApp(herald) { $0.paused }
        #expect(paused.paused)
        #expect(paused.reason == "UNAUTHENTICATED")
        let waiting = HeraldProcess.summary(try await herald.request("GET", "/v1/messages/\(id)").json)
        #expect(waiting["tok-1"] == "queued - 0 -", "a paused app's rows go back without charging")
        #expect(try await pair.simulator.requests().map { $0["status"] as? Int } == [401, 401])
        #expect(herald.logLines.contains { $0["msg"] as? String == "app paused: FCM refused the sender" })

        #expect(try runHerald(["resume", "default", "--db", herald.databasePath]).status == 0)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled["tok-1"] == "delivered - 1 -")
    }

    @Test func aFailingTokenEndpointIsRetriedWithoutPausing() async throws {
        let pair = try await start(control: #"{"token_fail_next": 2}"#)
        let id = try await post(pair.herald, #"{"to": "tok-1"}"#)
        let settled = HeraldProcess.summary(try await pair.herald.waitUntilSettled(id))
        #expect(settled["tok-1"] == "delivered - 1 -", "nothing is sent, or charged, until a token is had")
        let oauth = try await pair.simulator.stats()["oauth"] as? [String: Int]
        #expect(oauth?["failed"] == 2)
        #expect(oauth?["tokens_issued"] == 1)
        #expect(try await pair.simulator.requests().map { $0["status"] as? Int } == [200])
        #expect(try app(pair.herald).paused == false)
    }

    @Test func aKeyTheTokenEndpointRefusesPausesTheAppWithTheOAuthError() async throws {
        let pair = try await start(heraldKey: Self.otherKey)
        let herald = pair.herald
        let id = try await post(herald, #"{"to": "tok-1"}"#)
        let paused = try await waitForApp(herald) { $0.paused }
        #expect(paused.paused)
        #expect(paused.reason == "OAuth invalid_grant: Invalid JWT Signature.")
        #expect(try await pair.simulator.requests().isEmpty, "nothing is sent without an access token")
        let waiting = HeraldProcess.summary(try await herald.request("GET", "/v1/messages/\(id)").json)
        #expect(waiting["tok-1"] == "queued - 0 -")
        let status = try runHerald(["status", "--db", herald.databasePath])
        #expect(status.stdout.contains("OAuth invalid_grant: Invalid JWT Signature."), "\(status.stdout)")
        #expect(herald.stop() == 0)
        try expectKeyKeptSecret(pair, key: Self.otherKey)
    }

    // MARK: - Start-up

    @Test func startUpSaysExactlyWhatIsWrongWithTheKeyFile() throws {
        let directory = HeraldProcess.makeDirectory()
        let db = directory.appendingPathComponent("h.db").path
        func refusal(_ arguments: [String]) throws -> String {
            let run = try runHerald(["serve", "--db", db, "--listen", "127.0.0.1:0"] + arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            return run.stderr
        }
        let missing = directory.appendingPathComponent("missing.json").path
        #expect(try refusal(["--fcm-service-account", missing]).contains(
            "cannot read service account file \(missing): No such file or directory"))

        let notJSON = directory.appendingPathComponent("not.json").path
        try "-----BEGIN PRIVATE KEY-----".write(toFile: notJSON, atomically: true, encoding: .utf8)
        #expect(try refusal(["--fcm-service-account", notJSON]).contains("service account file \(notJSON) is not JSON"))

        let pem = Self.key.pkcs8PEM()
        let noEmail = directory.appendingPathComponent("no-email.json").path
        try #"{"type":"service_account","project_id":"p","private_key":\#(jsonString(pem))}"#
            .write(toFile: noEmail, atomically: true, encoding: .utf8)
        let noEmailText = try refusal(["--fcm-service-account", noEmail])
        #expect(noEmailText.contains(#"has no "client_email""#))
        #expect(!noEmailText.contains(pem.split(separator: "\n")[1]), "the key was echoed")

        let noProject = try Self.writeServiceAccount(key: Self.key, tokenURI: "http://127.0.0.1:1/token",
                                                     in: directory, name: "no-project.json")
        try String(contentsOfFile: noProject, encoding: .utf8)
            .replacingOccurrences(of: #""project_id":"test-project","#, with: "")
            .write(toFile: noProject, atomically: true, encoding: .utf8)
        #expect(try refusal(["--fcm-service-account", noProject]).contains(
            #"has no "project_id" and the config sets none"#))

        let good = try Self.writeServiceAccount(key: Self.key, tokenURI: "http://127.0.0.1:1/token",
                                                in: directory, name: "good.json")
        #expect(try refusal(["--fcm-service-account", good, "--fcm-key", "k"]).contains("not both"))
        let config = directory.appendingPathComponent("herald.json").path
        try #"{"apps": [{"name": "default", "provider": "fcm-v1", "service_account_file": "good.json"}]}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try refusal(["--config", config, "--fcm-key", "k"]).contains("legacy server key: remove one of them"))
        #expect(try refusal(["--fcm-service-account", good, "--fcm-endpoint", "https://fcm.googleapis.com/fcm/send"])
            .contains("its endpoint is a base URL"))
    }

    @Test func configFileAppsNameTheirProvider() async throws {
        let simulator = try SimulatorProcess(["--service-account", try Self.writeServiceAccount(
            key: Self.key, tokenURI: nil, in: HeraldProcess.makeDirectory(), name: "sim.json")])
        let base = String(simulator.endpoint.dropLast("/fcm/send".count))
        let directory = HeraldProcess.makeDirectory()
        _ = try Self.writeServiceAccount(key: Self.key, tokenURI: nil, in: directory, name: "relative.json")
        let config = directory.appendingPathComponent("herald.json").path
        try """
            {"apps": [
              {"name": "default", "provider": "fcm-v1", "service_account_file": "relative.json",
               "endpoint": "\(base)", "token_uri": "\(base)/token", "project_id": "test-project"},
              {"name": "old", "provider": "fcm-legacy", "endpoint": "\(simulator.endpoint)", "server_key": "k"}
            ]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(directory: directory, arguments: ["--config", config])
        let v1 = try await post(herald, #"{"to": "tok-v1"}"#)
        let legacy = try await post(herald, #"{"app": "old", "to": "tok-legacy"}"#)
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(v1))["tok-v1"] == "delivered - 1 -")
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(legacy))["tok-legacy"] == "delivered - 1 -")
        let formats = Dictionary(uniqueKeysWithValues: try await simulator.requests().map {
            (($0["tokens"] as? [String])?.first ?? "?", $0["format"] as? String ?? "?")
        })
        #expect(formats == ["tok-v1": "v1", "tok-legacy": "json"])
    }

    @Test func sandboxSendsV1AppsThroughTheBuiltInSimulator() async throws {
        let directory = HeraldProcess.makeDirectory()
        let config = directory.appendingPathComponent("herald.json").path
        try #"{"apps": [{"name": "default", "provider": "fcm-v1", "service_account_file": "/nonexistent.json"}]}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(directory: directory, arguments: ["--sandbox", "--config", config])
        let id = try await post(herald, #"{"registration_ids": ["a", "notreg-b"]}"#)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled == ["a": "delivered - 1 -", "notreg-b": "dropped NotRegistered 1 -"])
        #expect(herald.logLines.contains { $0["msg"] as? String == "fcm v1 access token obtained" })
    }
}

private func jsonString(_ text: String) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast()
        .description
}

extension SimulatorProcess {
    /// `GET /stats` as JSON.
    func stats() async throws -> [String: Any] {
        let (data, _) = try await URLSession.shared.data(from: baseURL.appendingPathComponent("stats"))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}
