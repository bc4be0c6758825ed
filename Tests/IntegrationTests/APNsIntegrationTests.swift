import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NetworkTestSupport
import OAuth
import Storage
import Testing

/// The real `herald serve` with an APNs app (SPEC §15) sending to `scripts/apns-h2-standin.js`: node's `http2`
/// over TLS, which verifies every provider token with node's own crypto against the key's public half, starts each
/// connection at one concurrent stream and raises it after the first answer, and answers by token prefix as Apple
/// does.
@Suite(.serialized) struct APNsIntegrationTests {
    static let keyID = "ABC123DEFG"
    static let teamID = "TEAM123456"

    struct Rig {
        let standIn: H2StandIn!
        let herald: HeraldProcess
    }

    /// Also an FCM v1 app `default` sending to `fcm`, when given (the two stand-ins' certificates in one bundle).
    func start(_ standInArguments: [String] = [], fcm: H2StandIn? = nil) throws -> Rig {
        let key = try P256PrivateKey.generate()
        let directory = HeraldProcess.makeDirectory()
        let keyFile = directory.appendingPathComponent("AuthKey_\(Self.keyID).p8").path
        try key.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        let publicFile = directory.appendingPathComponent("public.pem").path
        try key.publicKey.pem().write(toFile: publicFile, atomically: true, encoding: .utf8)
        let standIn = try H2StandIn([
            "--auth-key", publicFile, "--key-id", Self.keyID, "--team-id", Self.teamID, "--initial-streams", "1",
            "--delay-ms", "20",
        ] + standInArguments, script: "scripts/apns-h2-standin.js")
        var fcmApp = ""
        var certificates = try String(contentsOfFile: standIn.caFile, encoding: .utf8)
        if let fcm {
            let account = try V1IntegrationTests.writeServiceAccount(
                key: V1IntegrationTests.key, tokenURI: fcm.baseURL + "/token", in: directory, name: "sa.json")
            fcmApp = #", {"name": "default", "provider": "fcm-v1", "service_account_file": "\#(account)", "#
                + #""endpoint": "\#(fcm.baseURL)"}"#
            certificates += try String(contentsOfFile: fcm.caFile, encoding: .utf8)
        }
        let bundle = directory.appendingPathComponent("certificates.pem").path
        try certificates.write(toFile: bundle, atomically: true, encoding: .utf8)
        let config = directory.appendingPathComponent("herald.json").path
        try """
            {"apps": [{"name": "ios", "provider": "apns", "key_file": "\(keyFile)", "key_id": "\(Self.keyID)",
                       "team_id": "\(Self.teamID)", "topic": "com.example.app",
                       "endpoint": "https://127.0.0.1:\(standIn.port)"}\(fcmApp)]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(
            directory: directory, arguments: ["--config", config], environment: ["SSL_CERT_FILE": bundle])
        return Rig(standIn: standIn, herald: herald)
    }

    func post(_ rig: Rig, _ body: String) async throws {
        let reply = try await rig.herald.request("POST", "/v1/messages", body: body)
        #expect(reply.status == 202, "\(reply.text)")
    }

    /// `token state/reason` of every delivery, once none is queued or in flight (bounded wait).
    func settled(_ rig: Rig, count: Int) async throws -> [String: String] {
        var rows: [String: String] = [:]
        for _ in 0..<300 {
            let connection = try Connection(path: rig.herald.databasePath, mode: .readOnly)
            let all = try connection.query(
                "SELECT token, state || coalesce('/' || reason, '') FROM deliveries ORDER BY id") {
                ($0.string(0), $0.string(1))
            }
            rows = Dictionary(all, uniquingKeysWith: { $1 })
            if all.count == count && !all.contains(where: { $0.1.hasPrefix("queued") || $0.1.hasPrefix("inflight") }) {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return rows
    }

    func registry(_ rig: Rig) throws -> [String] {
        let connection = try Connection(path: rig.herald.databasePath, mode: .readOnly)
        return try connection.query("SELECT token FROM tokens ORDER BY token") { $0.string(0) }
    }

    @Test func everyAnswerOfAppleReachesTheQueueAndTheRegistry() async throws {
        let rig = try start()
        defer { rig.herald.stop() }
        let tokens = ["good-1", "good-2", "unregistered-1", "bad-1", "topic-1", "unavail-1-x"]
        for token in tokens + ["unregistered-at-1-y"] {
            let reply = try await rig.herald.request(
                "PUT", "/v1/tokens/\(token)", body: #"{"app":"ios","user":"u1"}"#)
            #expect(reply.status == 200 || reply.status == 201, "\(reply.text)")
        }
        try await post(rig, #"""
            {"app":"ios","tokens":\#(tokens + ["unregistered-at-1-y"]),
             "message":{"notification":{"title":"Hi","body":"there"},"data":{"order":"42"},
                        "apns":{"headers":{"apns-priority":"10"},"payload":{"aps":{"badge":3}}}}}
            """#)

        let rows = try await settled(rig, count: 7)
        #expect(rows["good-1"] == "delivered")
        #expect(rows["good-2"] == "delivered")
        #expect(rows["unavail-1-x"] == "delivered", "a 503 is retried")
        #expect(rows["unregistered-1"] == "dropped/Unregistered")
        #expect(rows["unregistered-at-1-y"] == "dropped/Unregistered")
        #expect(rows["bad-1"] == "dead/BadDeviceToken")
        #expect(rows["topic-1"] == "dead/DeviceTokenNotForTopic")
        // 410 after the registration deletes; a 410 dated before it (Apple's timestamp 1 ms after the epoch)
        // leaves the token registered; the invalid ones go.
        #expect(try registry(rig) == ["good-1", "good-2", "unavail-1-x", "unregistered-at-1-y"])

        let stats = try await rig.standIn.statsObject()
        #expect(stats["bad_jwt"] as? Int == 0, "every provider token verified by node's crypto")
        #expect(stats["over_limit"] as? Int == 0, "never more streams than the SETTINGS allowed")
        #expect(stats["duplicates"] as? Int == 0)
        let ids = stats["ids"] as? [String: [String]] ?? [:]
        let retried = ids["unavail-1-x"] ?? []
        #expect(retried.count == 2 && retried[0] == retried[1], "a retry carries the same apns-id: \(retried)")
        let headers = stats["headers"] as? [String: [String: String]] ?? [:]
        #expect(headers["good-1"]?["apns-topic"] == "com.example.app")
        #expect(headers["good-1"]?["apns-push-type"] == "alert")
        #expect(headers["good-1"]?["apns-priority"] == "10")
        let body = (stats["bodies"] as? [String: String] ?? [:])["good-1"] ?? ""
        #expect(body == #"{"aps":{"alert":{"title":"Hi","body":"there"},"badge":3},"order":"42"}"#)
    }

    @Test func anExpiredProviderTokenIsRenewedOnceAndTheMessageDelivered() async throws {
        let rig = try start(["--expire-first", "1"])
        defer { rig.herald.stop() }
        try await post(rig, #"{"app":"ios","tokens":["good-1"],"message":{"data":{"a":"b"}}}"#)

        let rows = try await settled(rig, count: 1)
        #expect(rows["good-1"] == "delivered")
        let stats = try await rig.standIn.statsObject()
        #expect(stats["expired_answers"] as? Int == 1)
        #expect(stats["jwts"] as? Int == 2, "the refused token, then one new token")
    }

    /// SPEC §17: one message to a user with no app reaches their Android phone over FCM and their iPhone over
    /// APNs, each delivery rendered by its own app's provider, and the message shows each delivery's app.
    @Test func oneMessageToAUserReachesTheirDevicesInEveryApp() async throws {
        let fcm = try H2StandIn(["--delay-ms", "5"])
        let rig = try start(fcm: fcm)
        defer { rig.herald.stop() }
        for (token, app) in [("android-phone", "default"), ("good-ipad", "ios"), ("someone-else", "ios")] {
            let user = token == "someone-else" ? "u2" : "u1"
            let reply = try await rig.herald.request(
                "PUT", "/v1/tokens/\(token)", body: #"{"app":"\#(app)","user":"\#(user)"}"#)
            #expect(reply.status == 200 || reply.status == 201, "\(reply.text)")
        }
        let reply = try await rig.herald.request("POST", "/v1/messages", body: #"""
            {"users":["u1"],"message":{"notification":{"title":"Hi","body":"there"},"data":{"order":"42"}}}
            """#)
        #expect(reply.status == 202, "\(reply.text)")
        #expect(reply.json["deliveries"] as? Int == 2)

        let rows = try await settled(rig, count: 2)
        #expect(rows == ["android-phone": "delivered", "good-ipad": "delivered"])
        #expect(try await fcm.stats().requests == 1)
        let apns = try await rig.standIn.statsObject()
        #expect((apns["ids"] as? [String: [String]])?.keys.sorted() == ["good-ipad"])
        let body = (apns["bodies"] as? [String: String] ?? [:])["good-ipad"] ?? ""
        #expect(body == #"{"aps":{"alert":{"title":"Hi","body":"there"}},"order":"42"}"#)
        let id = try #require(reply.json["id"] as? String)
        let message = try await rig.herald.request("GET", "/v1/messages/\(id)")
        let apps = (message.json["deliveries"] as? [[String: Any]] ?? []).map { "\($0["token"]!) \($0["app"]!)" }
        #expect(apps == ["android-phone default", "good-ipad ios"])
    }

    /// `--sandbox` has an APNs app `ios` beside FCM's `default`: the built-in simulator checks its provider token and
    /// answers by token prefix, so the quick start shows both platforms. It is reached as Apple is, over TLS and
    /// HTTP/2, trusting the simulator's throw-away certificate.
    @Test func theSandboxSendsToIOSThroughTheBuiltInSimulator() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox"])
        defer { herald.stop() }
        for token in ["ipad-1", "notreg-ipad"] {
            let reply = try await herald.request("PUT", "/v1/tokens/\(token)", body: #"{"app":"ios","user":"u1"}"#)
            #expect(reply.status == 200 || reply.status == 201, "\(reply.text)")
        }
        let reply = try await herald.request(
            "POST", "/v1/messages", body: #"{"app":"ios","users":["u1"],"notification":{"title":"Hi"}}"#)
        #expect(reply.status == 202, "\(reply.text)")
        let rows = try await settled(Rig(standIn: nil, herald: herald), count: 2)
        #expect(rows == ["ipad-1": "delivered", "notreg-ipad": "dropped/Unregistered"])

        let sandbox = try #require(herald.logLines.first { ($0["msg"] as? String)?.hasPrefix("SANDBOX MODE") == true })
        let apnsEndpoint = try #require(sandbox["simulator_https"] as? String)
        #expect(apnsEndpoint.hasPrefix("https://127.0.0.1:"))
        let app = herald.logLines.first { $0["msg"] as? String == "apns app" && $0["app"] as? String == "ios" }
        #expect(app?["endpoint"] as? String == apnsEndpoint, "the ios app sends to the TLS listener")
        // The simulator's request log (from its cleartext listener) says how each APNs request came.
        let legacy = try #require((sandbox["simulator"] as? String).flatMap(URL.init(string:)))
        let (data, _) = try await URLSession.shared.data(
            from: legacy.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("stats"))
        let stats = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        let apns = (stats["requests"] as? [[String: Any]] ?? []).filter {
            ($0["to"] as? String)?.contains("ipad") == true
        }
        #expect(apns.compactMap { $0["to"] as? String }.sorted() == ["ipad-1", "notreg-ipad"])
        #expect(apns.allSatisfy { $0["http"] as? String == "HTTP/2" }, "\(apns)")
    }

    @Test func aTopicForAnAPNsAppIsRefusedAtIngest() async throws {
        let rig = try start()
        defer { rig.herald.stop() }
        let reply = try await rig.herald.request(
            "POST", "/v1/messages", body: #"{"app":"ios","message":{"topic":"news","data":{"a":"b"}}}"#)
        #expect(reply.status == 400)
        #expect(reply.text.contains("APNs"))
    }
}
