import Foundation
import NetworkTestSupport
import OAuth
import PostgreSQLTestSupport
import Storage
import Support
import Testing

/// The real `herald serve` with a Web Push app (SPEC §16) sending to `scripts/webpush-h2-standin.js`: node's `http2`
/// over TLS, which makes the subscriptions as a browser does, verifies every VAPID header and decrypts every body
/// with node's own crypto (an implementation of RFC 8291/8292 independent of Herald's), and answers by the
/// subscription's name as push services do.
@Suite(.serialized) struct WebPushIntegrationTests {
    struct Rig {
        let standIn: H2StandIn!
        let herald: HeraldProcess
        var database: TestDatabase?
    }

    /// On SQLite, or on `database` (PostgreSQL).
    func start(on database: TestDatabase? = nil) throws -> Rig {
        let key = try P256PrivateKey.generate()
        let directory = HeraldProcess.makeDirectory()
        let keyFile = directory.appendingPathComponent("vapid.pem").path
        try key.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        let standIn = try H2StandIn(["--delay-ms", "5"], script: "scripts/webpush-h2-standin.js")
        let config = directory.appendingPathComponent("herald.json").path
        try """
            {"apps": [{"name": "web", "provider": "webpush", "vapid_private_key_file": "vapid.pem",
                       "vapid_subject": "mailto:ops@example.com", "max_connections": 64},
                      {"name": "default", "server_key": "k", "endpoint": "http://127.0.0.1:1/fcm/send"}]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(
            directory: directory, database: database?.url, arguments: ["--config", config],
            environment: ["SSL_CERT_FILE": standIn.caFile])
        return Rig(standIn: standIn, herald: herald, database: database)
    }

    /// The stand-in's subscriptions for `names`, as `PushSubscription.toJSON()` gives them, by name.
    func subscribe(_ rig: Rig, _ names: [String]) async throws -> [String: String] {
        let made = try await rig.standIn.post("/subscriptions", body: #"{"names":\#(names)}"#) as? [[String: Any]]
        var subscriptions: [String: String] = [:]
        for (name, subscription) in zip(names, made ?? []) {
            let data = try JSONSerialization.data(withJSONObject: subscription, options: [.sortedKeys])
            subscriptions[name] = String(decoding: data, as: UTF8.self)
        }
        return subscriptions
    }

    /// `name state/reason` of every delivery of message `id` (the name is the endpoint's last segment), once none is
    /// queued or in flight (bounded wait).
    func settled(_ rig: Rig, _ id: String) async throws -> [String: String] {
        let message = try await rig.herald.waitUntilSettled(id)
        var rows: [String: String] = [:]
        for delivery in message["deliveries"] as? [[String: Any]] ?? [] {
            let state = (delivery["state"] as? String ?? "?") + ((delivery["reason"] as? String).map { "/" + $0 } ?? "")
            rows[Self.name(of: delivery["token"] as? String ?? "")] = state
        }
        return rows
    }

    /// The names of the registered subscriptions, from either engine's `tokens` table.
    func registry(_ rig: Rig) throws -> [String] {
        let tokens: [String]
        if let database = rig.database {
            tokens = try database.connect().query("SELECT token FROM tokens") { $0.string(0) }
        } else {
            let connection = try Connection(path: rig.herald.databasePath, mode: .readOnly)
            tokens = try connection.query("SELECT token FROM tokens") { $0.string(0) }
        }
        return tokens.map(Self.name(of:)).sorted()
    }

    /// The answer's message id.
    func accepted(_ reply: HeraldProcess.Reply) throws -> String {
        #expect(reply.status == 202, "\(reply.text)")
        return try #require(reply.json["id"] as? String, "\(reply.text)")
    }

    static func name(of token: String) -> String {
        String(token.split(separator: "#").first?.split(separator: "/").last ?? "")
    }

    @Test func everyAnswerOfAPushServiceReachesTheQueueAndTheRegistry() async throws {
        try await everyAnswerReachesTheQueueAndTheRegistry(try start())
    }

    @Test func everyAnswerOfAPushServiceReachesTheQueueAndTheRegistryOnPostgreSQL() async throws {
        try await everyAnswerReachesTheQueueAndTheRegistry(try start(on: TestDatabase()))
    }

    func everyAnswerReachesTheQueueAndTheRegistry(_ rig: Rig) async throws {
        defer { rig.herald.stop() }
        let names = ["ok-1", "ok-2", "gone-1", "notfound-1", "bad-1", "unavail-1-x", "toomany-1-y"]
        let subscriptions = try await subscribe(rig, names)
        for name in names {
            let reply = try await rig.herald.request("PUT", "/v1/subscriptions", body: #"""
                {"app":"web","user":"u1","subscription":\#(subscriptions[name] ?? "")}
                """#)
            #expect(reply.status == 201, "\(reply.text)")
            #expect((reply.json["token"] as? String)?.contains("#p256dh=") == true)
        }
        let reply = try await rig.herald.request("POST", "/v1/messages", body: #"""
            {"app":"web","users":["u1"],
             "message":{"notification":{"title":"Hi","body":"there"},"data":{"order":"42"},
                        "webpush":{"headers":{"Urgency":"high","Topic":"order-42"},
                                   "notification":{"icon":"/i.png"},"fcm_options":{"link":"https://example.com/o/42"}}}}
            """#)
        let rows = try await settled(rig, try accepted(reply))
        #expect(rows.count == names.count)
        #expect(rows["ok-1"] == "delivered")
        #expect(rows["ok-2"] == "delivered")
        #expect(rows["unavail-1-x"] == "delivered", "a 503 is retried")
        #expect(rows["toomany-1-y"] == "delivered", "a 429 is retried after its Retry-After")
        #expect(rows["gone-1"] == "dropped/HTTP 410")
        #expect(rows["notfound-1"] == "dropped/HTTP 404")
        #expect(rows["bad-1"] == "dead/HTTP 400")
        #expect(try registry(rig) == ["bad-1", "ok-1", "ok-2", "toomany-1-y", "unavail-1-x"],
                "404 and 410 delete the subscription")

        let stats = try await rig.standIn.statsObject()
        #expect(stats["bad_vapid"] as? Int == 0, "every VAPID header verified by node's crypto")
        #expect(stats["decrypt_failures"] as? Int == 0, "every body decrypted by node's crypto")
        #expect(stats["duplicates"] as? Int == 0)
        #expect((stats["audiences"] as? [String]) == [rig.standIn.baseURL], "aud is the push service's origin")
        let plaintexts = stats["plaintexts"] as? [String: String] ?? [:]
        #expect(plaintexts["ok-1"] == #"""
            {"notification":{"title":"Hi","body":"there","icon":"/i.png"},"data":{"order":"42"},"link":"https://example.com/o/42"}
            """#)
        let headers = (stats["headers"] as? [String: [String: String]] ?? [:])["ok-1"] ?? [:]
        #expect(headers["urgency"] == "high")
        #expect(headers["topic"] == "order-42")
        #expect(headers["content-encoding"] == "aes128gcm")
        #expect(headers["ttl"].flatMap { Int($0) }.map { $0 > 2_419_000 } == true, "the remaining TTL: \(headers)")

        let events = try await rig.herald.request("GET", "/v1/token-events")
        let deleted = (events.json["events"] as? [[String: Any]] ?? []).compactMap { event -> String? in
            event["kind"] as? String == "deleted" ? Self.name(of: event["token"] as? String ?? "") : nil
        }
        #expect(deleted.sorted() == ["gone-1", "notfound-1"], "the feed tells the backend")
    }

    /// A message may name its subscription directly, as `PushSubscription.toJSON()` gives it; a push service that
    /// refuses the VAPID signature pauses the app with the reason.
    @Test func aSubscriptionTargetIsSentAndARefusedSignaturePausesTheApp() async throws {
        let rig = try start()
        defer { rig.herald.stop() }
        let subscriptions = try await subscribe(rig, ["direct-1", "forbidden-1"])
        let direct = try await rig.herald.request("POST", "/v1/messages", body: #"""
            {"app":"web","subscription":\#(subscriptions["direct-1"] ?? ""),"data":{"a":"b"},"priority":"high"}
            """#)
        #expect(try await settled(rig, try accepted(direct)) == ["direct-1": "delivered"])
        let stats = try await rig.standIn.statsObject()
        #expect((stats["plaintexts"] as? [String: String])?["direct-1"] == #"{"data":{"a":"b"}}"#)
        #expect((stats["headers"] as? [String: [String: String]])?["direct-1"]?["urgency"] == "high")

        let forbidden = try await rig.herald.request("POST", "/v1/messages", body: #"""
            {"app":"web","subscription":\#(subscriptions["forbidden-1"] ?? ""),"data":{"a":"b"}}
            """#)
        #expect(forbidden.status == 202, "\(forbidden.text)")
        var paused = ""
        for _ in 0..<300 {
            let connection = try Connection(path: rig.herald.databasePath, mode: .readOnly)
            paused = try connection.query("SELECT coalesce(pause_reason, '') FROM apps WHERE name = 'web'") {
                $0.string(0)
            }.first ?? ""
            if !paused.isEmpty { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(paused == "HTTP 403")
    }

    @Test func subscriptionsAreCheckedAtTheDoor() async throws {
        let rig = try start()
        defer { rig.herald.stop() }
        let good = try await subscribe(rig, ["ok-1"])["ok-1"] ?? ""
        let cases: [(body: String, says: String)] = [
            (#"{"app":"web","subscription":{"endpoint":"http://push.example/x","keys":{"p256dh":"BA","auth":"AA"}}}"#,
             "https"),
            (#"{"app":"web","subscription":{"endpoint":"https://push.example/x","keys":{"p256dh":"BAAA","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}}"#,
             "p256dh"),
            (#"{"app":"default","subscription":\#(good)}"#, "webpush"),
            (#"{"app":"nope","subscription":\#(good)}"#, "nope"),
            (#"{"app":"web"}"#, "subscription"),
        ]
        for (body, says) in cases {
            let reply = try await rig.herald.request("PUT", "/v1/subscriptions", body: body)
            #expect(reply.status == 400 || reply.status == 404, "\(body) → \(reply.status) \(reply.text)")
            #expect(reply.text.contains(says), "\(body) → \(reply.text)")
        }
        let plain = try await rig.herald.request("PUT", "/v1/tokens/not-a-subscription", body: #"{"app":"web"}"#)
        #expect(plain.status == 400 && plain.text.contains("PUT /v1/subscriptions"), "\(plain.text)")
        let registered = try #require(try WebPushSubscription(json: JSON.parse(Array(good.utf8))).token
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let elsewhere = try await rig.herald.request("PUT", "/v1/tokens/\(registered)", body: #"{"app":"default"}"#)
        #expect(elsewhere.status == 400 && elsewhere.text.contains("webpush"), "\(elsewhere.text)")
        #expect(try registry(rig).isEmpty, "nothing stored")
        let topic = try await rig.herald.request(
            "POST", "/v1/messages", body: #"{"app":"web","message":{"topic":"news","data":{"a":"b"}}}"#)
        #expect(topic.status == 400 && topic.text.contains("Web Push"), "\(topic.text)")
        let token = try await rig.herald.request(
            "POST", "/v1/messages", body: #"{"app":"web","to":"an-fcm-token","data":{"a":"b"}}"#)
        #expect(token.status == 400 && token.text.contains("subscription"), "\(token.text)")
    }

    /// A Web Push app that cannot work is refused at start, saying what to fix, and nothing is served.
    @Test func aWebPushAppWithoutItsKeyOrSubjectIsRefusedAtStart() throws {
        let directory = HeraldProcess.makeDirectory()
        let notAKey = directory.appendingPathComponent("not-a-key.pem").path
        try "hello".write(toFile: notAKey, atomically: true, encoding: .utf8)
        let cases: [(app: String, says: String)] = [
            (#"{"name":"web","provider":"webpush","vapid_subject":"mailto:a@b.c"}"#, "herald webpush-keys --out"),
            (#"{"name":"web","provider":"webpush","vapid_private_key_file":"k.pem"}"#, "vapid_subject"),
            (#"{"name":"web","provider":"webpush","vapid_private_key_file":"k.pem","vapid_subject":"ops"}"#,
             "vapid_subject"),
            (#"{"name":"web","provider":"webpush","vapid_private_key_file":"\#(notAKey)","vapid_subject":"mailto:a@b.c"}"#,
             "is not a VAPID key"),
            (#"{"name":"web","provider":"webpush","vapid_private_key_file":"missing.pem","vapid_subject":"mailto:a@b.c"}"#,
             "cannot read key file"),
            (#"{"name":"web","provider":"webpush","server_key":"k","vapid_private_key_file":"k.pem","vapid_subject":"mailto:a@b.c"}"#,
             #""server_key" does not apply to provider "webpush""#),
            (#"{"name":"web","provider":"webpush","vapid_private_key_file":"k.pem","vapid_subject":"mailto:a@b.c","#
                + #""max_connections":0}"#, "max_connections must be an integer in 1...10000"),
            (#"{"name":"web","provider":"webpush","vapid_private_key_file":"k.pem","vapid_subject":"mailto:a@b.c","#
                + #""max_connections":"many"}"#, "max_connections must be an integer in 1...10000"),
            (#"{"name":"default","server_key":"k","max_connections":8}"#,
             #""max_connections" does not apply to provider "fcm-legacy""#),
        ]
        for (app, says) in cases {
            let config = directory.appendingPathComponent("herald.json").path
            try #"{"apps": [\#(app)]}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let run = try runHerald([
                "serve", "--config", config, "--db", directory.appendingPathComponent("h.db").path,
            ])
            #expect(run.status != 0, "\(app)")
            #expect(run.stderr.contains(says), "\(app) → \(run.stderr)")
        }
    }

    /// `--sandbox` has a Web Push app `web`: the built-in simulator's push service takes every push, checks its
    /// VAPID header and answers by the endpoint's last segment.
    @Test func theSandboxSendsToBrowsersThroughTheBuiltInSimulator() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox"])
        defer { herald.stop() }
        let keys = #""keys":{"p256dh":"\#(WebPushSubscriptionSample.p256dh)","auth":"\#(WebPushSubscriptionSample.auth)"}"#
        for name in ["laptop-1", "notreg-laptop"] {
            let reply = try await herald.request("PUT", "/v1/subscriptions", body: #"""
                {"app":"web","user":"u1","subscription":{"endpoint":"https://push.example.net/push/\#(name)",\#(keys)}}
                """#)
            #expect(reply.status == 201, "\(reply.text)")
        }
        let reply = try await herald.request(
            "POST", "/v1/messages", body: #"{"app":"web","users":["u1"],"notification":{"title":"Hi"}}"#)
        let rig = Rig(standIn: nil, herald: herald, database: nil)
        #expect(try await settled(rig, try accepted(reply)) == [
            "laptop-1": "delivered", "notreg-laptop": "dropped/HTTP 410",
        ])
    }
}

/// RFC 8291 Appendix A's receiver: a real P-256 point and a 16-byte auth secret.
enum WebPushSubscriptionSample {
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
}
