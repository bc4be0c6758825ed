import Foundation
import Testing

/// Acknowledged work is never lost, misrouted or sent twice, end to end: the real `herald serve` and a real
/// `herald fcm-sim` on ephemeral loopback ports.
@Suite struct IntegrityIntegrationTests {
    static let serverKey = "sim-key-integrity"

    @Test func rowsWaitingLongerThanTheLeaseAreStillSentExactlyOnce() async throws {
        // Every answer takes 400 ms and one request is in flight at a time: the last of 10 messages waits about
        // 4 s inside the process, twice the 2 s lease. Renewal keeps the rescuer from handing it out again.
        let simulator = try SimulatorProcess(["--slow-rate", "1", "--slow-ms", "400"])
        let herald = try HeraldProcess(arguments: [
            "--fcm-key", Self.serverKey, "--fcm-endpoint", simulator.endpoint, "--concurrency", "1", "--lease", "2s",
        ])
        var ids: [String] = []
        for index in 0..<10 {
            let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-\#(index)"}"#)
            ids.append(try #require(reply.json["id"] as? String))
        }
        for id in ids {
            let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
            #expect(settled.values.allSatisfy { $0 == "delivered - 1 -" }, "\(settled)")
        }
        let tokens = try await simulator.requests().flatMap { $0["tokens"] as? [String] ?? [] }
        #expect(tokens.count == 10, "requests on the wire: \(tokens.sorted())")
        #expect(Set(tokens).count == 10)
        #expect(!herald.log.contains("rescued expired leases"))
        #expect(herald.stop() == 0)
    }

    @Test func idempotencyKeysBelongToTheirAppAndADifferentBodyIsAConflict() async throws {
        let directory = HeraldProcess.makeDirectory()
        let config = directory.appendingPathComponent("herald.json")
        try Data(#"""
            {"sandbox": true, "apps": [
                {"name": "shop", "provider": "fcm-legacy", "server_key": "k1",
                 "endpoint": "http://127.0.0.1:9/fcm/send"},
                {"name": "news", "provider": "fcm-legacy", "server_key": "k2",
                 "endpoint": "http://127.0.0.1:9/fcm/send"}
            ]}
            """#.utf8).write(to: config)
        let herald = try HeraldProcess(directory: directory, arguments: ["--config", config.path])
        let key = ["Idempotency-Key": "order-42"]
        let shop = try await herald.request(
            "POST", "/v1/messages", body: #"{"app": "shop", "to": "a", "data": {"order": "42"}}"#, headers: key)
        let news = try await herald.request(
            "POST", "/v1/messages", body: #"{"app": "news", "to": "b", "data": {"story": "7"}}"#, headers: key)
        #expect(shop.status == 202 && news.status == 202)
        let shopID = try #require(shop.json["id"] as? String)
        let newsID = try #require(news.json["id"] as? String)
        #expect(shopID != newsID, "app news got app shop's message")
        let stored = try await herald.request("GET", "/v1/messages/\(newsID)")
        #expect((stored.json["deliveries"] as? [[String: Any]])?.first?["token"] as? String == "b")

        let repeated = try await herald.request(
            "POST", "/v1/messages", body: #"{"app": "shop", "to": "a", "data": {"order": "42"}}"#, headers: key)
        #expect(repeated.status == 202 && repeated.json["id"] as? String == shopID)

        let conflict = try await herald.request(
            "POST", "/v1/messages", body: #"{"app": "shop", "to": "a", "data": {"order": "43"}}"#, headers: key)
        #expect(conflict.status == 409)
        let error = try #require(conflict.json["error"] as? [String: Any])
        #expect(error["code"] as? String == "IdempotencyConflict")
        #expect(!conflict.text.contains(shopID), "a conflict must not reveal the other message's id")
        #expect(herald.stop() == 0)
    }

    @Test func ttlZeroHeldByAPauseBeyondItsWindowIsExpiredNotSent() async throws {
        let simulator = try SimulatorProcess()
        let herald = try HeraldProcess(arguments: [
            "--fcm-key", Self.serverKey, "--fcm-endpoint", simulator.endpoint, "--ttl-zero-window", "1s",
        ], paused: true)
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-now", "time_to_live": 0}"#)
        let id = try #require(reply.json["id"] as? String)
        try await Task.sleep(nanoseconds: 1_500_000_000)
        #expect(try runHerald(["resume", "default", "--db", herald.databasePath]).status == 0)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled["tok-now"] == "dead Expired 0 -")
        #expect(try await simulator.requests().isEmpty, "a TTL 0 message went out after its window")

        let requeue = try runHerald(["dead", "requeue", "--db", herald.databasePath, "--json"])
        #expect(requeue.status == 0 && requeue.stdout.contains(#""requeued":0"#), "\(requeue.stdout)")
        #expect(herald.stop() == 0)
    }
}
