import Foundation
import Queue
import Storage
import Testing

/// The real `herald serve` delivering to a real `herald fcm-sim`, both on ephemeral loopback ports.
@Suite struct DeliveryIntegrationTests {
    static let officialAliases = ["--server-key", serverKey, "--alias", "8=unavail-1-8", "--alias", "15=invalid-15",
                                  "--alias", "23=canon-23-to-32", "--alias", "42=notreg-42"]

    static let serverKey = "sim-key-SECRET-0123"

    func serve(_ simulator: SimulatorProcess, directory: URL? = nil) throws -> HeraldProcess {
        try HeraldProcess(directory: directory,
                          arguments: ["--fcm-key", Self.serverKey, "--fcm-endpoint", simulator.endpoint])
    }

    @Test func officialSixTokenExampleEndsInTheRightStates() async throws {
        let simulator = try SimulatorProcess(Self.officialAliases)
        let herald = try serve(simulator)
        let reply = try await herald.request("POST", "/v1/messages", body: """
            {"registration_ids": ["4", "8", "15", "16", "23", "42"], "data": {"score": "4x8"}}
            """)
        let id = try #require(reply.json["id"] as? String)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled == [
            "4": "delivered - 1 -",
            "8": "delivered - 2 -",
            "15": "dead InvalidRegistration 1 -",
            "16": "delivered - 1 -",
            "23": "delivered - 1 32",
            "42": "dropped NotRegistered 1 -",
        ])
        let requests = try await simulator.requests()
        #expect(requests.count == 2, "one multicast, then one retry for token 8")
        #expect(requests.first?["tokens"] as? [String] == ["4", "8", "15", "16", "23", "42"])
        #expect(requests.last?["tokens"] as? [String] == ["8"])
        #expect(herald.stop() == 0)
        #expect(!herald.log.contains(Self.serverKey), "the FCM server key reached the log")
    }

    @Test func retryAfterKeepsTheAppQuietAndTheRetryCarriesTheRemainingTTL() async throws {
        let simulator = try SimulatorProcess()
        try await simulator.control(#"{"fail_next": 1, "status": 503, "retry_after": "2"}"#)
        let herald = try serve(simulator)
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-1", "time_to_live": 30}"#)
        let id = try #require(reply.json["id"] as? String)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled["tok-1"] == "delivered - 2 -")
        let requests = try await simulator.requests()
        #expect(requests.map { $0["status"] as? Int } == [503, 200])
        let first = try #require(requests.first?["at"] as? Int)
        let second = try #require(requests.last?["at"] as? Int)
        #expect(second - first >= 2000, "a request reached the app \(second - first) ms after Retry-After: 2")
        let firstTTL = try #require(requests.first?["time_to_live"] as? Int)
        #expect(firstTTL == 29 || firstTTL == 30, "whole seconds left of 30")
        let retriedTTL = try #require(requests.last?["time_to_live"] as? Int)
        #expect(retriedTTL <= 28, "the retry must carry the remaining TTL, not the original")
    }

    @Test func unauthorizedPausesTheAppWithoutChargingAndResumeDelivers() async throws {
        let simulator = try SimulatorProcess()
        try await simulator.control(#"{"unauthorized_next": 1}"#)
        let herald = try serve(simulator)
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-1"}"#)
        let id = try #require(reply.json["id"] as? String)
        var paused = false
        for _ in 0..<400 where !paused {
            let connection = try Connection(path: herald.databasePath, mode: .readOnly)
            paused = try connection.queryOne("SELECT paused FROM apps WHERE name = 'default'") { $0.int(0) } == 1
            if !paused { try await Task.sleep(nanoseconds: 25_000_000) }
        }
        #expect(paused)
        let waiting = HeraldProcess.summary(try await herald.request("GET", "/v1/messages/\(id)").json)
        #expect(waiting["tok-1"] == "queued - 0 -", "a 401 must not charge an attempt")
        #expect(try await simulator.requests().count == 1, "nothing is sent while the app is paused")

        let resume = try runHerald(["resume", "default", "--db", herald.databasePath])
        #expect(resume.status == 0)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled["tok-1"] == "delivered - 1 -")
    }

    @Test func aTTLShorterThanTheOutageExpiresAndNothingIsSentAfterIt() async throws {
        let simulator = try SimulatorProcess()
        try await simulator.control(#"{"fail_next": 1000, "status": 503}"#)
        let herald = try serve(simulator)
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "tok-1", "time_to_live": 3}"#)
        let id = try #require(reply.json["id"] as? String)
        let message = try await herald.waitUntilSettled(id)
        #expect(HeraldProcess.summary(message)["tok-1"]?.hasPrefix("dead Expired") == true)
        let expiresAt = try #require(message["expires_at"] as? Int)
        let requests = try await simulator.requests()
        #expect(!requests.isEmpty)
        #expect(requests.allSatisfy { ($0["at"] as? Int ?? .max) < expiresAt },
                "a request was sent after the TTL ran out")
    }

    @Test func sigkillMidFlightLosesNothing() async throws {
        let simulator = try SimulatorProcess()
        try await simulator.control(#"{"slow_rate": 1.0, "slow_ms": 3000}"#)
        let directory = HeraldProcess.makeDirectory()
        let herald = try serve(simulator, directory: directory)
        var ids: [String] = []
        for index in 0..<40 {
            let reply = try await herald.request("POST", "/v1/messages",
                                                 body: #"{"registration_ids": ["a\#(index)", "b\#(index)"]}"#)
            ids.append(try #require(reply.json["id"] as? String))
        }
        for _ in 0..<400 where try await simulator.requests().isEmpty { try await Task.sleep(nanoseconds: 25_000_000) }
        herald.stop(signal: SIGKILL)

        try await simulator.control(#"{"reset": true}"#)
        let restarted = try serve(simulator, directory: directory)
        for id in ids {
            let settled = HeraldProcess.summary(try await restarted.waitUntilSettled(id))
            #expect(settled.count == 2)
            #expect(settled.values.allSatisfy { $0.hasPrefix("delivered") }, "\(id): \(settled)")
        }
        #expect(restarted.stop() == 0)
    }

    @Test func sandboxDeliversWithoutCredentials() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox"])
        #expect(herald.logLines.contains { ($0["msg"] as? String)?.contains("SANDBOX") == true })
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"registration_ids": ["a", "notreg-b"]}"#)
        let id = try #require(reply.json["id"] as? String)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled == ["a": "delivered - 1 -", "notreg-b": "dropped NotRegistered 1 -"])
    }
}
