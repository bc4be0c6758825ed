import Foundation
import OAuth
import Queue
import Storage
import Testing

/// The real `herald serve` over FCM HTTP v1 to a real `herald fcm-sim`: how fast it lets itself send.
@Suite(.serialized) struct V1PacingIntegrationTests {
    func start(_ arguments: [String], control: String? = nil) async throws -> (SimulatorProcess, HeraldProcess) {
        let directory = HeraldProcess.makeDirectory()
        let key = V1IntegrationTests.key
        let simulatorFile = try V1IntegrationTests.writeServiceAccount(
            key: key, tokenURI: nil, in: directory, name: "sim.json")
        let simulator = try SimulatorProcess(["--service-account", simulatorFile])
        if let control { try await simulator.control(control) }
        let base = String(simulator.endpoint.dropLast("/fcm/send".count))
        let keyFile = try V1IntegrationTests.writeServiceAccount(
            key: key, tokenURI: base + "/token", in: directory, name: "service-account.json")
        let herald = try HeraldProcess(
            directory: directory, arguments: ["--fcm-service-account", keyFile, "--fcm-endpoint", base] + arguments)
        return (simulator, herald)
    }

    @Test func maxRateHoldsInEveryWindowByCount() async throws {
        let rate = 20
        let (simulator, herald) = try await start(["--max-rate", String(rate)])
        var ids: [String] = []
        for index in 0..<60 {
            let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-\#(index)"}"#)
            ids.append(try #require(reply.json["id"] as? String))
        }
        for id in ids {
            let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
            #expect(settled.values.allSatisfy { $0.hasPrefix("delivered") }, "\(settled)")
        }
        let arrivals = try await simulator.requests()
            .filter { ($0["tokens"] as? [String])?.first?.hasPrefix("tok-") == true }
            .compactMap { $0["at"] as? Int }.sorted()
        #expect(arrivals.count == 60)
        // At 20/s with a burst of 1, a second holds 21 sends; one more for the network's jitter between Herald
        // and the simulator. A slow machine only spreads them further. Unpaced, all 60 arrive within one second.
        var busiest = 0
        var end = 0
        for start in arrivals.indices {
            while end < arrivals.count && arrivals[end] < arrivals[start] + 1_000 { end += 1 }
            busiest = max(busiest, end - start)
        }
        #expect(busiest <= rate + 2, "\(busiest) requests reached FCM within one second")
    }

    @Test func quotaExceededWithoutRetryAfterClosesTheGateForAMinute() async throws {
        let (simulator, herald) = try await start([], control: #"{"fail_next": 1, "status": 429}"#)
        _ = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-a"}"#)
        var gate: (until: Int64, reason: String?, since: Int64?) = (0, nil, nil)
        for _ in 0..<400 where gate.until == 0 {
            try await Task.sleep(nanoseconds: 25_000_000)
            let connection = try Connection(path: herald.databasePath, mode: .readOnly)
            gate = try connection.queryOne(
                "SELECT gate_until, gate_reason, gated_at FROM apps WHERE name = 'default'"
            ) { ($0.int64(0), $0.optionalString(1), $0.optionalInt64(2)) } ?? gate
        }
        let refused = try #require(try await simulator.requests().first)
        #expect(refused["status"] as? Int == 429)
        let refusedAt = Int64(try #require(refused["at"] as? Int))
        #expect(gate.until >= refusedAt + 59_000, "a quota error without Retry-After closes the gate for a minute")
        #expect(gate.until <= refusedAt + 65_000)
        #expect(gate.reason == "quota", "herald status says why")
        let since = try #require(gate.since)
        #expect(since >= refusedAt - 1_000 && since <= refusedAt + 5_000, "and since when: \(since - refusedAt) ms")
    }

    @Test func maxRateIsCheckedAtStartUp() throws {
        let directory = HeraldProcess.makeDirectory()
        let db = directory.appendingPathComponent("h.db").path
        for bad in ["0", "-5", "fast", "1e9"] {
            let run = try runHerald(["serve", "--db", db, "--listen", "127.0.0.1:0", "--sandbox", "--max-rate", bad])
            #expect(run.status == 2)
            #expect(run.stderr.contains("--max-rate must be a number of sends per second"), "\(run.stderr)")
        }
    }
}
