import FCMSimulator
import HTTP
import Support
import Testing

/// `GET /stats` and `stats()`: counts and the log of recent sends, so tests can ask which request carried what.
@Suite struct StatsTests {
    @Test func statsRecordEachRequestInArrivalOrder() throws {
        let simulator = FCMSimulator.everySide(serverKey: "k")
        let before = Clock.nowMillis()
        func send(_ body: String, key: String = "key=k") throws -> Int {
            try simulator.sendJSON(body, authorization: key).status
        }
        let first = #"{"registration_ids":["a","notreg-b"],"time_to_live":60,"collapse_key":"c","priority":"high"}"#
        #expect(try send(first) == 200)
        #expect(try send(#"{"to":"/topics/news","time_to_live":0,"dry_run":true}"#) == 200)
        let plain = try simulator.call(
            "POST", "/fcm/send", headers: [("authorization", "key=k")],
            body: "registration_id=unavail-1-c&time_to_live=30&collapse_key=score&priority=normal")
        #expect(plain.status == 500)
        #expect(try send(#"{"to":"d","time_to_live":3000000}"#) == 200)
        #expect(try send("{") == 400)
        #expect(try send(#"{"to":"e","time_to_live":5}"#, key: "key=wrong") == 401)
        #expect(try send(#"{"condition":"'x' in topics"}"#) == 200)
        let after = Clock.nowMillis()

        let stats = simulator.stats()
        #expect(stats.totalRequests == 7)
        #expect(stats.statuses == [200: 4, 500: 1, 400: 1, 401: 1])
        #expect(stats.tokensReceived == 5)
        #expect(stats.topicMessages == 1)
        #expect(stats.conditionMessages == 1)
        #expect(stats.outcomes == [
            "delivered": 3, "NotRegistered": 1, "Unavailable": 1, "InvalidTtl": 1,
        ])
        let requests = stats.requests
        #expect(requests.map(\.tokens) == [["a", "notreg-b"], [], ["unavail-1-c"], ["d"], [], ["e"], []])
        #expect(requests.map(\.timeToLive) == [60, 0, 30, 3_000_000, nil, 5, nil])
        #expect(requests.map(\.status) == [200, 200, 500, 200, 400, 401, 200])
        #expect(requests.map(\.format) == [.json, .json, .plain, .json, .json, .json, .json])
        #expect(requests.map(\.collapseKey) == ["c", nil, "score", nil, nil, nil, nil])
        #expect(requests.map(\.priority) == ["high", nil, "normal", nil, nil, nil, nil])
        #expect(requests.map(\.dryRun) == [false, true, false, false, false, false, false])
        #expect(requests.map(\.to) == [nil, nil, nil, "d", nil, "e", nil])
        #expect(requests[1].topic == "/topics/news")
        #expect(requests[6].condition == "'x' in topics")
        #expect(requests.allSatisfy { (before...after).contains($0.at) })
        #expect(requests.map(\.at) == requests.map(\.at).sorted())
    }

    @Test func statsEndpointServesTheSameAsJSON() throws {
        let simulator = FCMSimulator.everySide()
        _ = try simulator.sendJSON(#"{"registration_ids":["a","canon-b-to-c"],"time_to_live":120,"priority":"high"}"#)
        _ = try simulator.control(#"{"fail_next": 1}"#)
        _ = try simulator.sendJSON(#"{"to":"/topics/t","collapse_key":"k"}"#)
        _ = try simulator.sendPlain("registration_id=x")

        let response = try simulator.call("GET", "/stats")
        #expect(response.status == 200)
        let stats = try response.json()
        #expect(stats["total_requests"]?.int64Value == 3)
        #expect(stats["statuses"] == .object([("200", 2), ("503", 1)]))
        #expect(stats["tokens_received"]?.int64Value == 3)
        #expect(stats["outcomes"] == .object([("canonical", 1), ("delivered", 2)]))
        #expect(stats["faults"]?["server_errors"]?.int64Value == 1)
        #expect(stats["seed"]?.int64Value != nil || stats["seed"]?.doubleValue != nil)
        let requests = try #require(stats["requests"]?.arrayValue)
        #expect(requests.count == 3)
        #expect(requests[0].keys == [
            "at", "tokens", "time_to_live", "collapse_key", "priority", "dry_run", "format", "status", "http",
        ])
        #expect(requests[0]["http"] == "HTTP/1.1")
        #expect(requests[0]["tokens"] == ["a", "canon-b-to-c"])
        #expect(requests[0]["time_to_live"] == 120)
        #expect(requests[0]["priority"] == "high")
        #expect(requests[1]["topic"] == "/topics/t")
        #expect(requests[1]["time_to_live"] == .null)
        #expect(requests[1]["collapse_key"] == "k")
        #expect(requests[1]["status"] == 503)
        #expect(requests[2]["format"] == "plain")
        #expect(requests[2]["tokens"] == ["x"])
        #expect(requests.map { $0["at"]?.int64Value } == simulator.stats().requests.map(\.at))

        let last = try simulator.call("GET", "/stats?requests=1").json()
        #expect(last["requests"]?.arrayValue?.count == 1)
        #expect(last["requests"]?.arrayValue?.first?["format"] == "plain")
        #expect(try simulator.call("GET", "/stats?requests=-1").status == 400)
    }

    @Test func controlAndStatsAreNotCounted() throws {
        let simulator = FCMSimulator.everySide()
        _ = try simulator.control(#"{"slow_ms": 10}"#)
        _ = try simulator.call("GET", "/stats")
        #expect(simulator.stats().totalRequests == 0)
    }

    @Test func theLogKeepsTheMostRecentRequests() throws {
        let simulator = FCMSimulator.everySide(.init(requestLogLimit: 3))
        for ttl in 1...5 { _ = try simulator.sendJSON(#"{"to":"a","time_to_live":\#(ttl)}"#) }
        #expect(simulator.stats().requests.map(\.timeToLive) == [3, 4, 5])
        #expect(simulator.stats().totalRequests == 5)
    }

    @Test func theLogIsBoundedByTheTokensItHolds() throws {
        let simulator = FCMSimulator.everySide(.init(requestLogTokenLimit: 4))
        for ttl in 1...3 { _ = try simulator.sendJSON(#"{"registration_ids":["a","b","c"],"time_to_live":\#(ttl)}"#) }
        #expect(simulator.stats().requests.map(\.timeToLive) == [3])
        _ = try simulator.sendJSON(#"{"to":"a","time_to_live":4}"#)
        #expect(simulator.stats().requests.map(\.timeToLive) == [3, 4])
        _ = try simulator.sendJSON(#"{"to":"a","time_to_live":5}"#)
        #expect(simulator.stats().requests.map(\.timeToLive) == [4, 5])
    }

    @Test func aLongRunKeepsExactlyTheLastRequests() throws {
        let simulator = FCMSimulator.everySide(.init(requestLogLimit: 100))
        for ttl in 1...2_500 { _ = try simulator.sendJSON(#"{"to":"a","time_to_live":\#(ttl)}"#) }
        #expect(simulator.stats().requests.map(\.timeToLive) == Array(2_401...2_500))
    }
}
