import Foundation
import Ingest
import NetworkTestSupport
import OAuth
import PostgreSQLTestSupport
import Storage
import Support
import Testing
import WebPushCrypto

/// The real `herald serve` with a Web Push app (SPEC §16) sending to `scripts/webpush-h2-standin.js`: node's `http2`
/// over TLS, which makes the subscriptions as a browser does, verifies every VAPID header and decrypts every body
/// with node's own crypto (an implementation of RFC 8291/8292 independent of Herald's), and answers by the
/// subscription's name as push services do.
@Suite(.serialized) struct WebPushIntegrationTests {
    struct Rig {
        let standIn: H2StandIn!
        let herald: HeraldProcess
        var database: TestDatabase?
        /// A second push service, another origin (`twoOrigins`).
        var other: H2StandIn?
        /// The FCM app's simulator (`fcm`).
        var simulator: SimulatorProcess?
    }

    /// On SQLite, or on `database` (PostgreSQL). `twoOrigins`: a second stand-in, a push service of its own origin.
    /// `fcm`: app `default` sends to a real `herald fcm-sim` instead of nowhere, once resumed (it starts paused).
    /// The stand-ins are on loopback: the app allows private endpoints unless `privateEndpoints` is false.
    /// `trusting`: more stand-ins whose certificates Herald trusts; `arguments`: more `serve` flags.
    func start(
        on database: TestDatabase? = nil, twoOrigins: Bool = false, fcm: Bool = false, privateEndpoints: Bool = true,
        trusting: [H2StandIn] = [], arguments: [String] = []
    ) throws -> Rig {
        let key = try P256PrivateKey.generate()
        let directory = HeraldProcess.makeDirectory()
        let keyFile = directory.appendingPathComponent("vapid.pem").path
        try key.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        let standIn = try H2StandIn(["--delay-ms", "5"], script: "scripts/webpush-h2-standin.js")
        let other = twoOrigins ? try H2StandIn(["--delay-ms", "5"], script: "scripts/webpush-h2-standin.js") : nil
        let simulator = fcm ? try SimulatorProcess() : nil
        let config = directory.appendingPathComponent("herald.json").path
        try """
            {"apps": [{"name": "web", "provider": "webpush", "vapid_private_key_file": "vapid.pem",
                       "vapid_subject": "mailto:ops@example.com", "allow_private_endpoints": \(privateEndpoints),
                       "max_connections": 64},
                      {"name": "default", "server_key": "k",
                       "endpoint": "\(simulator?.endpoint ?? "http://127.0.0.1:1/fcm/send")"}]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        // Both stand-ins' certificates, trusted as one bundle.
        let bundle = directory.appendingPathComponent("ca.pem").path
        let certificates = try ([standIn.caFile, other?.caFile].compactMap { $0 } + trusting.map(\.caFile))
            .map { try String(contentsOfFile: $0) }
        try certificates.joined(separator: "\n").write(toFile: bundle, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(
            directory: directory, database: database?.url, arguments: ["--config", config] + arguments, paused: fcm,
            environment: ["SSL_CERT_FILE": bundle])
        return Rig(standIn: standIn, herald: herald, database: database, other: other, simulator: simulator)
    }

    /// The stand-in's subscriptions for `names`, as `PushSubscription.toJSON()` gives them, by name; on `standIn` when
    /// given (another origin).
    func subscribe(_ rig: Rig, _ names: [String], on standIn: H2StandIn? = nil) async throws -> [String: String] {
        let made = try await (standIn ?? rig.standIn).post("/subscriptions", body: #"{"names":\#(names)}"#)
            as? [[String: Any]]
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

    /// App `web` as `herald status --json` shows it.
    func webStatus(_ rig: Rig) throws -> [String: Any] {
        let status = try runHerald(["status", "--json", "--db", rig.herald.databasePath])
        let apps = (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["apps"]
        return (apps as? [[String: Any]] ?? []).first { $0["app"] as? String == "web" } ?? [:]
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

    /// A message may name its subscription directly, as `PushSubscription.toJSON()` gives it.
    @Test func aSubscriptionTargetIsSent() async throws {
        let rig = try start()
        defer { rig.herald.stop() }
        let subscriptions = try await subscribe(rig, ["direct-1"])
        let direct = try await rig.herald.request("POST", "/v1/messages", body: #"""
            {"app":"web","subscription":\#(subscriptions["direct-1"] ?? ""),"data":{"a":"b"},"priority":"high"}
            """#)
        #expect(try await settled(rig, try accepted(direct)) == ["direct-1": "delivered"])
        let stats = try await rig.standIn.statsObject()
        #expect((stats["plaintexts"] as? [String: String])?["direct-1"] == #"{"data":{"a":"b"}}"#)
        #expect((stats["headers"] as? [String: [String: String]])?["direct-1"]?["urgency"] == "high")
    }

    /// SPEC §19: a push service that refuses the VAPID signature stops only itself. Its deliveries wait uncharged,
    /// after 5 different subscriptions refused in a row the origin is paused (shown by `herald status`), the app is
    /// neither paused nor gated, every delivery to the good origin is delivered, and `herald resume` reopens it.
    @Test func aRefusingOriginIsPausedAloneWhileTheGoodOriginIsDelivered() async throws {
        let rig = try start(twoOrigins: true)
        defer { rig.herald.stop() }
        let other = try #require(rig.other)
        let good = (1...20).map { "ok-\($0)" }
        let refusing = (1...5).map { "forbidden-\($0)" }
        var subscriptions = try await subscribe(rig, good)
        subscriptions.merge(try await subscribe(rig, refusing, on: other)) { $1 }
        for name in good + refusing {
            let reply = try await rig.herald.request("PUT", "/v1/subscriptions", body: #"""
                {"app":"web","user":"u1","subscription":\#(subscriptions[name] ?? "")}
                """#)
            #expect(reply.status == 201, "\(reply.text)")
        }
        let id = try accepted(try await rig.herald.request(
            "POST", "/v1/messages", body: #"{"app":"web","users":["u1"],"data":{"a":"b"}}"#))

        var originRow: [String: Any] = [:]
        var rows: [String: String] = [:]
        for _ in 0..<300 {
            let web = try webStatus(rig)
            #expect(web["paused"] as? Bool == false && web["gated"] as? Bool == false, "the app goes on: \(web)")
            originRow = (web["origins"] as? [[String: Any]] ?? []).first ?? [:]
            let message = try await rig.herald.request("GET", "/v1/messages/\(id)").json
            rows = [:]
            for delivery in message["deliveries"] as? [[String: Any]] ?? [] {
                let state = delivery["state"] as? String ?? "?"
                let detail = [delivery["reason"] as? String, (delivery["attempts"] as? Int).map(String.init)]
                rows[Self.name(of: delivery["token"] as? String ?? "")] = ([state] + detail.compactMap { $0 })
                    .joined(separator: " ")
            }
            if originRow["paused"] as? Bool == true, good.allSatisfy({ rows[$0] == "delivered 1" }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(originRow["origin"] as? String == other.baseURL)
        #expect(originRow["paused"] as? Bool == true)
        #expect(originRow["pause_reason"] as? String == "HTTP 403 for 5 subscriptions in a row")
        for name in good { #expect(rows[name] == "delivered 1", "\(name): \(rows[name] ?? "-")") }
        for name in refusing {
            #expect(rows[name] == "queued HTTP 403 0", "waits for the origin, no attempt charged: \(rows[name] ?? "-")")
        }
        let text = try runHerald(["status", "--db", rig.herald.databasePath]).stdout
        #expect(text.contains("web: origin \(other.baseURL) is paused"), "\(text)")

        let resumed = try runHerald(["resume", "web", "--db", rig.herald.databasePath])
        #expect(resumed.stdout.contains("web: resumed"), "\(resumed.stdout) \(resumed.stderr)")
        let after = try runHerald(["status", "--json", "--db", rig.herald.databasePath]).stdout
        #expect(!after.contains(other.baseURL), "resuming the app resumed its origin: \(after)")
    }

    /// SPEC §19 and §10's hostile row: beside a good push service, five hostile origins (403, 429 with a day's
    /// `Retry-After`, 400, never answering, 8 MiB answers). Every good delivery is delivered, the app is never paused
    /// or gated, and each hostile delivery ends, or waits for its own origin, alone.
    @Test func hostilePushServicesHurtOnlyThemselves() async throws {
        let hostile = try H2StandIn([], script: "scripts/hostile-push-standin.js")
        let rig = try start(trusting: [hostile], arguments: ["--request-timeout", "2s"])
        defer { rig.herald.stop() }
        let modes = ["forbidden", "toomany", "bad", "hang", "huge"]
        let good = (1...40).map { "ok-\($0)" }
        let subscriptions = try await subscribe(rig, good + ["keys"])
        // The stand-in's keys (a point on P-256 and an auth secret) with the hostile origins' endpoints.
        let made = try #require(subscriptions["keys"])
        let keys = made[try #require(made.range(of: #""keys""#)).lowerBound...]
        var bodies = good.map { subscriptions[$0] ?? "" }
        for mode in modes {
            let port = try #require(hostile.ports[mode])
            bodies += (1...2).map { #"{"endpoint":"https://127.0.0.1:\#(port)/push/\#(mode)-\#($0)",\#(keys)"# }
        }
        for body in bodies {
            let reply = try await rig.herald.request(
                "PUT", "/v1/subscriptions", body: #"{"app":"web","user":"u1","subscription":\#(body)}"#)
            #expect(reply.status == 201, "\(reply.text)")
        }
        let id = try accepted(try await rig.herald.request(
            "POST", "/v1/messages", body: #"{"app":"web","users":["u1"],"data":{"a":"b"}}"#))

        // What each delivery comes to: the good ones delivered; a refused message dead for that delivery alone; the
        // others back in the queue (uncharged for 403) until their origin's gate opens; an answer too large retried,
        // never taken as delivered.
        var expected = Dictionary(uniqueKeysWithValues: good.map { ($0, "delivered") })
        for n in 1...2 {
            expected["bad-\(n)"] = "dead HTTP 400"
            expected["forbidden-\(n)"] = "queued HTTP 403"
            expected["toomany-\(n)"] = "queued HTTP 429"
            expected["hang-\(n)"] = "queued timeout"
            expected["huge-\(n)"] = "queued ResponseTooLarge"
        }
        // An 8 MiB answer's first failure is ResponseTooLarge (the metric below); node answers a client that cancels
        // streams often (Herald cancels each answer past 64 KiB) with ENHANCE_YOUR_CALM, a reset, from the third on.
        func agrees(_ name: String, _ row: String?) -> Bool {
            row == expected[name] || (name.hasPrefix("huge-") && row == "queued reset")
        }
        var rows: [String: String] = [:]
        for _ in 0..<600 {
            let web = try webStatus(rig)
            #expect(web["paused"] as? Bool == false && web["gated"] as? Bool == false, "the app goes on: \(web)")
            let message = try await rig.herald.request("GET", "/v1/messages/\(id)").json
            rows = [:]
            for delivery in message["deliveries"] as? [[String: Any]] ?? [] {
                let state = [delivery["state"] as? String, delivery["reason"] as? String].compactMap { $0 }
                rows[Self.name(of: delivery["token"] as? String ?? "")] = state.joined(separator: " ")
            }
            if rows.count == expected.count, expected.keys.allSatisfy({ agrees($0, rows[$0]) }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        for (name, state) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(agrees(name, rows[name]), "\(name): \(rows[name] ?? "-"), not \(state)")
        }
        let metrics = try await rig.herald.request("GET", "/metrics").text
        #expect(metrics.contains(#"herald_fcm_requests_total{app="web",code="ResponseTooLarge"}"#),
                "the 8 MiB answers failed as too large, not as delivered or reset: \(metrics)")
        let origins = try runHerald(["status", "--json", "--db", rig.herald.databasePath]).stdout
        for mode in ["toomany", "hang", "huge"] {
            #expect(origins.contains("127.0.0.1:\(hostile.ports[mode] ?? 0)"), "\(mode)'s origin is gated: \(origins)")
        }
    }

    /// SPEC §17 and §19: one message to a person reaches their phone (FCM) and their browser (Web Push); the push
    /// service that refuses it (400) ends that delivery alone.
    @Test func aPushServiceRefusingAMessageEndsOnlyItsOwnDelivery() async throws {
        let rig = try start(fcm: true)
        defer { rig.herald.stop() }
        let subscription = try await subscribe(rig, ["bad-1"])["bad-1"] ?? ""
        let web = try await rig.herald.request("PUT", "/v1/subscriptions", body: #"""
            {"app":"web","user":"ann","subscription":\#(subscription)}
            """#)
        #expect(web.status == 201, "\(web.text)")
        let phone = try await rig.herald.request("PUT", "/v1/tokens/phone-1", body: #"{"app":"default","user":"ann"}"#)
        #expect(phone.status == 201 || phone.status == 200, "\(phone.text)")
        let id = try accepted(try await rig.herald.request(
            "POST", "/v1/messages", body: #"{"users":["ann"],"message":{"notification":{"title":"Hi"}}}"#))
        // The phone's app is paused: its delivery is still queued when the push service refuses the browser's.
        var states: [String: String] = [:]
        for _ in 0..<300 {
            let message = try await rig.herald.request("GET", "/v1/messages/\(id)").json
            for delivery in message["deliveries"] as? [[String: Any]] ?? [] {
                states[Self.name(of: delivery["token"] as? String ?? "")] = delivery["state"] as? String
            }
            if states["bad-1"] == "dead" { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(states == ["phone-1": "queued", "bad-1": "dead"])
        #expect(try runHerald(["resume", "default", "--db", rig.herald.databasePath]).status == 0)
        #expect(try await settled(rig, id) == ["phone-1": "delivered", "bad-1": "dead/HTTP 400"])
        #expect(try await rig.simulator?.requests().count == 1, "FCM was sent the message")
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

    /// SPEC §19: without `allow_private_endpoints`, a subscription whose name resolves to loopback is never connected
    /// to. `localhost` is refused at ingest, so the row is written straight into the registry (as if registered while
    /// its name was public): the delivery is dead, `ForbiddenAddress`, and the stand-in saw no connection at all.
    @Test func aSubscriptionWhoseNameResolvesToLoopbackIsNeverConnectedTo() async throws {
        let rig = try start(privateEndpoints: false)
        defer { rig.herald.stop() }
        let made = try await subscribe(rig, ["ok-1"])["ok-1"] ?? ""
        let literal = try await rig.herald.request(
            "PUT", "/v1/subscriptions", body: #"{"app":"web","user":"u1","subscription":\#(made)}"#)
        #expect(literal.status == 400 && literal.text.contains("loopback"), "\(literal.text)")
        let token = try WebPushSubscription(json: JSON.parse(Array(made.utf8))).token
            .replacingOccurrences(of: "https://127.0.0.1:", with: "https://localhost:")
        let named = made.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let byName = try await rig.herald.request(
            "PUT", "/v1/subscriptions", body: #"{"app":"web","subscription":\#(named)}"#)
        #expect(byName.status == 400 && byName.text.contains("this machine"), "\(byName.text)")
        let registry = try Connection(path: rig.herald.databasePath)
        _ = try registry.run(
            "INSERT INTO tokens (token, app, user, created_at, updated_at) VALUES (?, 'web', 'u1', 0, 0)",
            .text(token))

        let reply = try await rig.herald.request(
            "POST", "/v1/messages", body: #"{"app":"web","users":["u1"],"data":{"a":"b"}}"#)

        #expect(try await settled(rig, try accepted(reply)) == ["ok-1": "dead/ForbiddenAddress"])
        let stats = try await rig.standIn.statsObject()
        #expect(stats["connections"] as? Int == 0, "nothing connected: \(stats)")
        #expect(stats["requests"] as? Int == 0)
    }

    /// A Web Push app that cannot work is refused at start, saying what to fix, and nothing is served.
    @Test func aWebPushAppWithoutItsKeyOrSubjectIsRefusedAtStart() throws {
        let directory = HeraldProcess.makeDirectory()
        let notAKey = directory.appendingPathComponent("not-a-key.pem").path
        try "hello".write(toFile: notAKey, atomically: true, encoding: .utf8)
        let vapid = #""name":"web","provider":"webpush","vapid_private_key_file":"k.pem","vapid_subject":"mailto:a@b""#
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
            (#"{\#(vapid),"origin_concurrency":0}"#,
             "origin_concurrency must be an integer in 1...10000"),
            (#"{\#(vapid),"origin_concurrency":"9"}"#,
             "origin_concurrency must be an integer in 1...10000"),
            (#"{\#(vapid),"allow_private_endpoints":"yes"}"#, #""allow_private_endpoints" must be true or false"#),
            (#"{\#(vapid),"trusted_push_hosts":[]}"#, #""trusted_push_hosts" must be a non-empty list of host names"#),
            (#"{\#(vapid),"trusted_push_hosts":["https://push.apple.com"]}"#, #""trusted_push_hosts" must be"#),
            (#"{\#(vapid),"max_connections":0}"#, "max_connections must be an integer in 1...10000"),
            (#"{\#(vapid),"max_connections":"many"}"#, "max_connections must be an integer in 1...10000"),
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
