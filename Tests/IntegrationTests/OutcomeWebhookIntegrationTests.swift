import Foundation
import Testing

/// Outcome webhooks end to end (SPEC §23): a real `herald serve` in the sandbox posts its outcomes to a receiver that
/// checks every signature with the Standard Webhooks reference library from PyPI (`scripts/outcome_receiver.py`).
@Suite(.serialized) struct OutcomeWebhookIntegrationTests {
    /// The receiver: its log of requests, one JSON object each.
    final class Receiver: @unchecked Sendable {
        let process = Process()
        let port: Int
        let logFile: URL

        init(directory: URL, secretFile: String, arguments: [String] = []) throws {
            logFile = directory.appendingPathComponent("receiver.jsonl")
            process.executableURL = URL(fileURLWithPath: try PythonSDKs.python())
            process.arguments = [
                PythonSDKs.root.appendingPathComponent("scripts/outcome_receiver.py").path,
                "--secret-file", secretFile, "--log", logFile.path,
            ] + arguments
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var line = Data()
            while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty,
                  byte != Data("\n".utf8) {
                line += byte
            }
            port = try #require(Int(String(decoding: line, as: UTF8.self)), "the receiver printed no port")
        }

        deinit {
            // SIGKILL, not SIGTERM: the child inherits the signal mask of the test's thread, which blocks SIGTERM,
            // so a terminate() would leave it running and waitUntilExit() waiting for ever.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        var requests: [[String: Any]] {
            ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }
        }

        /// Each outcome the receiver accepted (answered 2xx), by its seq.
        var accepted: [Int: [String: Any]] {
            var outcomes: [Int: [String: Any]] = [:]
            for request in requests where request["status"] as? Int == 204 {
                for item in request["data"] as? [[String: Any]] ?? [] { outcomes[item["seq"] as? Int ?? -1] = item }
            }
            return outcomes
        }

        /// Waits until `done` holds for the receiver, and records an issue naming `what` when it never does. The
        /// deadline only bounds a broken test: it asserts nothing about speed.
        func waitUntil(
            _ what: String, seconds: Double = 180, sourceLocation: SourceLocation = #_sourceLocation,
            _ done: (Receiver) -> Bool
        ) async throws {
            let deadline = Date().addingTimeInterval(seconds)
            while !done(self) {
                guard Date() < deadline else {
                    Issue.record("gave up waiting: \(what)", sourceLocation: sourceLocation)
                    return
                }
                try await Task.sleep(nanoseconds: 50_000_000)
            }
        }
    }

    /// A secret made by `herald webhook-secret --out`, and a config file naming the receiver as the top-level webhook.
    static func configure(_ directory: URL) throws -> (secret: String, config: String) {
        let secret = directory.appendingPathComponent("outcomes.whsec").path
        let made = try runHerald(["webhook-secret", "--out", secret])
        #expect(made.status == 0, "\(made.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: secret)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        return (secret, directory.appendingPathComponent("herald.json").path)
    }

    static func writeConfig(_ path: String, port: Int, secret: String) throws {
        try Data(#"{"outcome_webhook": {"url": "http://127.0.0.1:\#(port)/hook", "secret_file": "\#(secret)"}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
    }

    @Test func everyOutcomeOfAMixedBatchArrivesSignedAfterTheReceiverRefusedAtFirst() async throws {
        let directory = HeraldProcess.makeDirectory()
        let (secret, config) = try Self.configure(directory)
        let receiver = try Receiver(directory: directory, secretFile: secret, arguments: ["--fail-first", "2"])
        try Self.writeConfig(config, port: receiver.port, secret: secret)
        let herald = try HeraldProcess(directory: directory, arguments: ["--sandbox", "--config", config])
        let reply = try await herald.request(
            "POST", "/v1/messages", body: #"{"registration_ids": ["ok-1", "notreg-2", "invalid-3"]}"#)
        let id = try #require(reply.json["id"] as? String)

        try await receiver.waitUntil("three outcomes accepted") { $0.accepted.count >= 3 }
        let outcomes = receiver.accepted.values.filter { $0["message_id"] as? String == id }
        let states = Dictionary(uniqueKeysWithValues: outcomes.map {
            ($0["token"] as? String ?? "?", "\($0["state"] as? String ?? "?") \($0["reason"] as? String ?? "-")")
        })
        #expect(states == [
            "ok-1": "delivered -", "notreg-2": "dropped NotRegistered", "invalid-3": "dead INVALID_ARGUMENT",
        ])
        let requests = receiver.requests
        #expect(requests.allSatisfy { $0["verified"] as? Bool == true }, "a request did not verify")
        #expect(requests.allSatisfy { $0["type"] as? String == "outcomes" })
        // The refused batches came again under the same id.
        let refused = Set(requests.filter { $0["status"] as? Int == 503 }.compactMap { $0["id"] as? String })
        let accepted = Set(requests.filter { $0["status"] as? Int == 204 }.compactMap { $0["id"] as? String })
        #expect(!refused.isEmpty && refused.isSubset(of: accepted), "refused \(refused), accepted \(accepted)")
        // The feed says the same, in order.
        let feed = try await herald.request("GET", "/v1/outcomes?app=default").json
        let items = feed["outcomes"] as? [[String: Any]] ?? []
        #expect(items.compactMap { $0["seq"] as? Int } == receiver.accepted.keys.sorted())
        // `herald status` shows the webhook caught up, and the receiver's refusals as its last error.
        let lastSeq = receiver.accepted.keys.max() ?? -1
        var webhook: [String: Any] = [:]
        try await receiver.waitUntil("status shows the cursor at seq \(lastSeq)") { _ in
            let status = try? runHerald(["status", "--json", "--db", herald.databasePath])
            let json = (try? JSONSerialization.jsonObject(with: Data((status?.stdout ?? "").utf8))) as? [String: Any]
            webhook = (json?["outcome_webhooks"] as? [[String: Any]])?.first ?? [:]
            return webhook["seq"] as? Int == lastSeq
        }
        #expect(webhook["webhook"] as? String == "*" && webhook["batches_in_flight"] as? Int == 0)
        #expect(webhook["lag_seconds"] as? Double == 0 && webhook["skipped"] as? Int == 0)
        #expect(webhook["last_error"] as? String == "503" && webhook["last_error_at"] is Int)
        #expect(herald.stop() == 0)
    }

    @Test func killedWithBatchesInFlightItSendsEveryOutcomeAndRepeatsOnlyUnderTheSameID() async throws {
        let directory = HeraldProcess.makeDirectory()
        let (secret, config) = try Self.configure(directory)
        let hold = directory.appendingPathComponent("hold")
        #expect(FileManager.default.createFile(atPath: hold.path, contents: nil))
        let receiver = try Receiver(directory: directory, secretFile: secret, arguments: ["--hold", hold.path])
        try Self.writeConfig(config, port: receiver.port, secret: secret)
        let herald = try HeraldProcess(directory: directory, arguments: ["--sandbox", "--config", config])
        // Two rounds of 30 outcomes, each refused as a batch of its own before the next is posted: batches that are
        // not full, so the same ranges come again after the restart only if the batches in flight were kept.
        var tokens: [String] = []
        for round in 0..<2 {
            for index in 0..<3 {
                let batch = (0..<10).map { "t\(round)-\(index)-\($0)" }
                tokens += batch
                let body = #"{"registration_ids": [\#(batch.map { "\"\($0)\"" }.joined(separator: ","))]}"#
                _ = try await herald.request("POST", "/v1/messages", body: body)
            }
            try await receiver.waitUntil("round \(round)'s outcomes refused") {
                Set($0.requests.flatMap { $0["data"] as? [[String: Any]] ?? [] }.compactMap { $0["token"] as? String })
                    .isSuperset(of: tokens)
            }
        }
        #expect(Set(receiver.requests.compactMap { $0["id"] as? String }).count >= 2)
        herald.stop(signal: SIGKILL)
        let refusedBeforeTheKill = Set(receiver.requests.compactMap { $0["id"] as? String })
        let requestsBeforeTheKill = receiver.requests.count
        try FileManager.default.removeItem(at: hold)

        let restarted = try HeraldProcess(directory: directory, arguments: ["--sandbox", "--config", config])
        try await receiver.waitUntil("every token's outcome accepted") {
            Set($0.accepted.values.compactMap { $0["token"] as? String }).count >= tokens.count
        }
        #expect(Set(receiver.accepted.values.compactMap { $0["token"] as? String }) == Set(tokens))
        // Every outcome sent more than once went under one id, and the batches in flight at the kill came again.
        var idsOfSeq: [Int: Set<String>] = [:]
        for request in receiver.requests {
            for item in request["data"] as? [[String: Any]] ?? [] {
                idsOfSeq[item["seq"] as? Int ?? -1, default: []].insert(request["id"] as? String ?? "?")
            }
        }
        #expect(idsOfSeq.values.allSatisfy { $0.count == 1 }, "an outcome was sent under two ids")
        let sentAfterTheRestart = Set(receiver.requests.dropFirst(requestsBeforeTheKill).compactMap {
            $0["id"] as? String
        })
        #expect(refusedBeforeTheKill.isSubset(of: sentAfterTheRestart))
        #expect(receiver.requests.allSatisfy { $0["verified"] as? Bool == true }, "a request did not verify")
        #expect(restarted.stop() == 0)
    }
}
