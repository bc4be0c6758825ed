import Foundation
import HMSSimulator
import HTTP
import Testing

/// SPEC §21 end to end: the real `herald serve` with an HMS Push Kit app, against the simulator's HMS side on a
/// loopback port of its own (its token endpoint and send API, checking the client and the app id).
@Suite struct HMSIntegrationTests {
    struct Rig {
        let simulator: HMSSimulator
        let server: HTTPServer
        let herald: HeraldProcess

        func stop() {
            herald.stop()
            server.shutdown(gracePeriod: 0)
        }
    }

    func start(secret: String = "s3cret") throws -> Rig {
        let simulator = HMSSimulator(account: .init(appID: "10000001", clientSecret: "s3cret"))
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: simulator)
        let base = "http://\(try server.start())"
        let directory = HeraldProcess.makeDirectory()
        let secretFile = directory.appendingPathComponent("hms-secret").path
        // As `echo` writes it: the newline (and any whitespace around the secret) is not part of it.
        try "  \(secret)\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        chmod(secretFile, 0o600)
        let config = directory.appendingPathComponent("herald.json").path
        try #"""
            {"apps": [{"name": "huawei", "provider": "hms", "app_id": "10000001", "client_secret_file": "hms-secret",
                       "endpoint": "\#(base)", "token_uri": "\#(base)\#(HMSSimulator.tokenPath)"}]}
            """#.write(toFile: config, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(directory: directory, arguments: ["--config", config])
        return Rig(simulator: simulator, server: server, herald: herald)
    }

    func post(_ rig: Rig, tokens: [String]) async throws -> [String: String] {
        for token in tokens {
            let reply = try await rig.herald.request(
                "PUT", "/v1/tokens/\(token)", body: #"{"app":"huawei","user":"u1"}"#)
            #expect(reply.status == 200 || reply.status == 201, "\(reply.text)")
        }
        let reply = try await rig.herald.request("POST", "/v1/messages", body: #"""
            {"app":"huawei","users":["u1"],"message":{"notification":{"title":"Hi"},"data":{"order":"42"}}}
            """#)
        #expect(reply.status == 202, "\(reply.text)")
        let id = try #require(reply.json["id"] as? String)
        return HeraldProcess.summary(try await rig.herald.waitUntilSettled(id))
    }

    func registry(_ rig: Rig) throws -> String {
        try runHerald(["tokens", "list", "--app", "huawei", "--json", "--db", rig.herald.databasePath]).stdout
    }

    @Test func illegalTokensAreDeletedAndTheRestDelivered() async throws {
        let rig = try start()
        defer { rig.stop() }
        let rows = try await post(rig, tokens: ["good-1", "good-2", "notreg-3"])
        #expect(rows["good-1"]?.hasPrefix("delivered - 1") == true, "\(rows)")
        #expect(rows["good-2"]?.hasPrefix("delivered - 1") == true, "\(rows)")
        #expect(rows["notreg-3"]?.hasPrefix("dropped NotRegistered 1") == true, "\(rows)")
        let registry = try registry(rig)
        #expect(registry.contains("good-1") && !registry.contains("notreg-3"), "\(registry)")
        let stats = rig.simulator.stats()
        #expect(stats.sendRequests == 1, "three tokens, one request")
        #expect(stats.answers["80100000"] == 1)
        #expect(stats.lastBody?.contains(#""data":"{\"order\":\"42\"}""#) == true, "\(stats.lastBody ?? "")")
    }

    @Test func aRefusedClientPausesTheApp() async throws {
        let rig = try start(secret: "not-the-secret")
        defer { rig.stop() }
        for token in ["good-1"] {
            let reply = try await rig.herald.request(
                "PUT", "/v1/tokens/\(token)", body: #"{"app":"huawei","user":"u1"}"#)
            #expect(reply.status == 200 || reply.status == 201, "\(reply.text)")
        }
        let reply = try await rig.herald.request("POST", "/v1/messages", body: #"{"app":"huawei","users":["u1"]}"#)
        #expect(reply.status == 202, "\(reply.text)")
        var app: [String: Any] = [:]
        for _ in 0..<300 {
            let status = try runHerald(["status", "--json", "--db", rig.herald.databasePath])
            let apps = (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["apps"]
            app = (apps as? [[String: Any]] ?? []).first { $0["app"] as? String == "huawei" } ?? [:]
            if app["paused"] as? Bool == true { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(app["paused"] as? Bool == true, "\(app)")
        let reason = app["pause_reason"] as? String ?? ""
        #expect(reason.contains("1101") && reason.contains("12304"), "\(reason)")
        #expect(!rig.herald.log.contains("not-the-secret"), "the secret is never logged")
        #expect(rig.simulator.stats().sendRequests == 0)
        let id = try #require(reply.json["id"] as? String)
        let rows = HeraldProcess.summary(try await rig.herald.request("GET", "/v1/messages/\(id)").json)
        #expect(rows["good-1"] == "queued - 0 -", "waits, uncharged, for `herald resume`")
    }

    @Test func flowControlIsRetriedThroughTheGate() async throws {
        let rig = try start()
        defer { rig.stop() }
        let rows = try await post(rig, tokens: ["unavail-1-a"])
        #expect(rows["unavail-1-a"] == "delivered - 2 -", "\(rows)")
        let stats = rig.simulator.stats()
        #expect(stats.answers["HTTP 503"] == 1 && stats.answers["80000000"] == 1, "\(stats)")
        #expect(stats.sendRequests == 2)
    }

    /// The quick start (README): `--sandbox` has an FCM app, an APNs app, a Web Push app and an HMS app, and one
    /// `users` message without an app reaches a device in each (SPEC §17, §21).
    @Test func theSandboxsUsersMessageReachesFCMAPNsWebPushAndHMS() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox"])
        defer { herald.stop() }
        for (token, app) in [("android-1", "default"), ("ipad-1", "ios"), ("huawei-1", "hms")] {
            let reply = try await herald.request("PUT", "/v1/tokens/\(token)", body: #"{"app":"\#(app)","user":"u1"}"#)
            #expect(reply.status == 200 || reply.status == 201, "\(reply.text)")
        }
        let keys = #""keys":{"p256dh":"\#(WebPushSubscriptionSample.p256dh)","auth":"\#(WebPushSubscriptionSample.auth)"}"#
        let subscription = try await herald.request("PUT", "/v1/subscriptions", body: #"""
            {"app":"web","user":"u1","subscription":{"endpoint":"https://push.example.net/push/laptop-1",\#(keys)}}
            """#)
        #expect(subscription.status == 201, "\(subscription.text)")
        let reply = try await herald.request(
            "POST", "/v1/messages", body: #"{"users":["u1"],"notification":{"title":"Hi","body":"there"}}"#)
        #expect(reply.status == 202, "\(reply.text)")
        let id = try #require(reply.json["id"] as? String)
        let message = try await herald.waitUntilSettled(id)
        let apps = (message["deliveries"] as? [[String: Any]] ?? []).map {
            "\($0["app"] as? String ?? "?") \($0["state"] as? String ?? "?")"
        }
        #expect(apps.sorted() == ["default delivered", "hms delivered", "ios delivered", "web delivered"])
        let app = herald.logLines.first { $0["msg"] as? String == "hms app" && $0["app"] as? String == "hms" }
        #expect(app?["app_id"] as? String == "10000001")
    }
}
