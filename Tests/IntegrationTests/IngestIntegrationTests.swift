import Foundation
import Queue
import Storage
import Testing

/// The real server, the real SQLite file: what a backend sees over HTTP, and what lands in the database.
@Suite struct IngestIntegrationTests {
    /// Reads the database the way an operator would, with a separate connection.
    func query<T>(_ herald: HeraldProcess, _ sql: String, _ arguments: [SQLValue] = [],
                  row: (Statement) throws -> T) throws -> [T] {
        let connection = try Connection(path: herald.databasePath, mode: .readOnly)
        return try connection.query(sql, arguments, row: row)
    }

    @Test func acceptedMessageIsCommittedWithTheSpecColumns() async throws {
        let herald = try HeraldProcess(paused: true)
        let reply = try await herald.request("POST", "/v1/messages", body: """
            {"registration_ids": ["tok-1", "tok-2"], "priority": "high", "time_to_live": 600,
             "collapse_key": "score", "data": {"score": "4x8"}, "notification": {"title": "hi"}}
            """)
        #expect(reply.status == 202)
        let id = try #require(reply.json["id"] as? String)
        #expect(reply.json["deliveries"] as? Int == 2)

        let messages = try query(herald,
            "SELECT app, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, expires_at - created_at "
                + "FROM messages WHERE id = ?",
            [.text(id)]) {
                [$0.string(0), $0.string(1), $0.string(2), $0.string(3), $0.string(4), $0.string(5), $0.string(6),
                 $0.string(7)]
            }
        #expect(messages.count == 1)
        let row = try #require(messages.first)
        #expect(row[0] == "default")
        #expect(row[1].contains(#""data":{"score":"4x8"}"#))
        #expect(!row[1].contains("registration_ids"))
        #expect(Array(row[2...]) == ["tokens", "score", "high", "600", "0", "600000"])

        let deliveries = try query(herald,
            "SELECT token, state, attempts, next_attempt_at <= updated_at FROM deliveries "
                + "WHERE message_id = ? ORDER BY id",
            [.text(id)]) { "\($0.string(0)) \($0.string(1)) \($0.int(2)) \($0.int(3))" }
        #expect(deliveries == ["tok-1 queued 0 1", "tok-2 queued 0 1"])

        let shown = try await herald.request("GET", "/v1/messages/\(id)")
        #expect(shown.status == 200)
        #expect((shown.json["deliveries"] as? [[String: Any]])?.compactMap { $0["token"] as? String }
            == ["tok-1", "tok-2"])
        #expect((shown.json["counts"] as? [String: Any])?["queued"] as? Int == 2)
        #expect(herald.stop() == 0)
    }

    @Test func invalidMessageIsRefusedWithItsFCMCodeAndNothingIsStored() async throws {
        let herald = try HeraldProcess(paused: true)
        let cases: [(String, String)] = [
            (#"{"to": "a", "time_to_live": 2419201}"#, "InvalidTtl"),
            (#"{"to": "a", "data": {"from": "x"}}"#, "InvalidDataKey"),
            (#"{"data": {"a": "b"}}"#, "MissingRegistration"),
            (#"{"to": "a", "condition": "'x' in topics"}"#, "InvalidParameters"),
            (#"{"to": "a", "colour": 1}"#, "InvalidParameters"),
            ("not json", "InvalidJson"),
        ]
        for (body, code) in cases {
            let reply = try await herald.request("POST", "/v1/messages", body: body)
            #expect(reply.status == 400, "\(body)")
            #expect((reply.json["error"] as? [String: Any])?["code"] as? String == code, "\(body): \(reply.text)")
        }
        #expect(try query(herald, "SELECT count(*) FROM messages") { $0.int(0) } == [0])
        #expect(try query(herald, "SELECT count(*) FROM deliveries") { $0.int(0) } == [0])
    }

    @Test func aMessageForAnAppThisHeraldDoesNotServeIsRefused() async throws {
        let herald = try HeraldProcess(paused: true)
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "a", "app": "nope"}"#)
        #expect(reply.status == 400)
        #expect((reply.json["error"] as? [String: Any])?["code"] as? String == "InvalidParameters")
        #expect(reply.text.contains("unknown app"))
        let batch = try await herald.request("POST", "/v1/messages/batch",
                                             body: #"{"messages": [{"to": "a", "app": "nope"}, {"to": "b"}]}"#)
        let results = try #require(batch.json["results"] as? [[String: Any]])
        #expect(results.first?["error"] != nil)
        #expect(results.last?["deliveries"] as? Int == 1)
        #expect(try query(herald, "SELECT count(*) FROM messages") { $0.int(0) } == [1])
    }

    @Test func idempotentRepeatReturnsTheFirstAnswer() async throws {
        let herald = try HeraldProcess(paused: true)
        let body = #"{"to": "tok-1", "data": {"n": "1"}}"#
        let first = try await herald.request("POST", "/v1/messages", body: body,
                                             headers: ["Idempotency-Key": "order-42"])
        let again = try await herald.request("POST", "/v1/messages", body: body,
                                             headers: ["Idempotency-Key": "order-42"])
        #expect(first.status == 202)
        #expect(again.status == 202)
        #expect(again.json["id"] as? String == first.json["id"] as? String)
        #expect(try query(herald, "SELECT count(*) FROM deliveries") { $0.int(0) } == [1])
    }

    @Test func batchCommitsTheValidItemsAndReportsTheInvalidOnesInOrder() async throws {
        let herald = try HeraldProcess(paused: true)
        let reply = try await herald.request("POST", "/v1/messages/batch", body: """
            {"messages": [{"to": "a"}, {"to": "b", "time_to_live": -1}, {"registration_ids": ["c", "d"]}]}
            """)
        #expect(reply.status == 200)
        let results = try #require(reply.json["results"] as? [[String: Any]])
        #expect(results.count == 3)
        #expect(results[0]["deliveries"] as? Int == 1)
        #expect((results[1]["error"] as? [String: Any])?["code"] as? String == "InvalidTtl")
        #expect(results[2]["deliveries"] as? Int == 2)
        let tokens = try query(herald, "SELECT token FROM deliveries ORDER BY id") { $0.string(0) }
        #expect(tokens == ["a", "c", "d"])
    }

    @Test func moreThanAThousandTokensAreOneDeliveryEach() async throws {
        let herald = try HeraldProcess(paused: true)
        let tokens = (0..<1500).map { "\"t\($0)\"" }.joined(separator: ",")
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"registration_ids": [\#(tokens)]}"#)
        #expect(reply.status == 202)
        #expect(reply.json["deliveries"] as? Int == 1500)
        #expect(try query(herald, "SELECT count(*) FROM deliveries") { $0.int(0) } == [1500])
    }

    @Test func usersAddressingGoesThroughTheTokenRegistry() async throws {
        let herald = try HeraldProcess(paused: true)
        #expect(try await herald.request("PUT", "/v1/tokens/phone", body: #"{"user": "alice"}"#).status == 201)
        #expect(try await herald.request("PUT", "/v1/tokens/laptop",
                                         body: #"{"app": "default", "user": "alice"}"#).status == 201)
        #expect(try await herald.request("PUT", "/v1/tokens/laptop", body: #"{"user": "alice"}"#).status == 200)
        let token = try await herald.request("GET", "/v1/tokens/phone")
        #expect(token.json["user"] as? String == "alice")

        let reply = try await herald.request("POST", "/v1/messages", body: #"{"users": ["alice"], "data": {"a": "b"}}"#)
        #expect(reply.json["deliveries"] as? Int == 2)
        let nobody = try await herald.request("POST", "/v1/messages", body: #"{"users": ["nobody"]}"#)
        #expect(nobody.status == 202)
        #expect(nobody.json["deliveries"] as? Int == 0)

        #expect(try await herald.request("DELETE", "/v1/tokens/phone").status == 204)
        #expect(try await herald.request("GET", "/v1/tokens/phone").status == 404)
        #expect(try await herald.request("DELETE", "/v1/tokens/phone").status == 404)
    }

    @Test func cancelDropsQueuedDeliveries() async throws {
        let herald = try HeraldProcess(paused: true)
        let id = try #require(try await herald.request("POST", "/v1/messages",
                                                       body: #"{"to": "x"}"#).json["id"] as? String)
        let cancelled = try await herald.request("DELETE", "/v1/messages/\(id)")
        #expect(cancelled.status == 200)
        #expect(cancelled.json["cancelled"] as? Int == 1)
        let states = try query(herald, "SELECT state || '/' || reason FROM deliveries") { $0.string(0) }
        #expect(states == ["dropped/Cancelled"])
        #expect(try await herald.request("DELETE", "/v1/messages/nope").status == 404)
    }

    @Test func apiTokenIsRequiredWhenSet() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox", "--api-token", "s3cret-token"], paused: true)
        #expect(try await herald.request("POST", "/v1/messages", body: #"{"to": "a"}"#).status == 401)
        let wrong = try await herald.request("POST", "/v1/messages", body: #"{"to": "a"}"#,
                                             headers: ["Authorization": "Bearer s3cret-tokeN"])
        #expect(wrong.status == 401)
        let right = try await herald.request("POST", "/v1/messages", body: #"{"to": "a"}"#,
                                             headers: ["Authorization": "Bearer s3cret-token"])
        #expect(right.status == 202)
        #expect(try await herald.request("GET", "/healthz").status == 200)
        #expect(try await herald.request("GET", "/readyz").status == 200)
        herald.stop()
        #expect(!herald.log.contains("s3cret-token"))
    }

    @Test func everyAcknowledgedMessageSurvivesSIGKILL() async throws {
        let directory = HeraldProcess.makeDirectory()
        let herald = try HeraldProcess(directory: directory, paused: true)
        // Eight clients post concurrently; the server is killed while they are still posting.
        let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
            for client in 0..<8 {
                group.addTask {
                    var ids: [String] = []
                    for index in 0..<400 {
                        guard let reply = try? await herald.request(
                            "POST", "/v1/messages", body: #"{"to": "c\#(client)-\#(index)"}"#) else { break }
                        guard reply.status == 202, let id = reply.json["id"] as? String else { break }
                        ids.append(id)
                        if client == 0 && index == 150 { kill(herald.process.processIdentifier, SIGKILL) }
                    }
                    return ids
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        herald.process.waitUntilExit()
        #expect(acknowledged.count >= 150)

        // Restart on the same file: recovery from the WAL must hold every acknowledged message.
        let restarted = try HeraldProcess(directory: directory)
        let connection = try Connection(path: restarted.databasePath, mode: .readOnly)
        let stored = Set(try connection.query("SELECT message_id FROM deliveries") { $0.string(0) })
        let lost = Set(acknowledged).subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) acknowledged messages were lost")
        #expect(restarted.stop() == 0)
    }

    @Test func sigtermStopsCleanlyAndCheckpoints() async throws {
        let herald = try HeraldProcess(paused: true)
        #expect(try await herald.request("POST", "/v1/messages", body: #"{"to": "a"}"#).status == 202)
        #expect(herald.stop(signal: SIGTERM) == 0)
        let wal = herald.databasePath + "-wal"
        let walSize = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        #expect(walSize == 0, "the WAL was not checkpointed on shutdown")
        #expect(herald.logLines.contains { $0["msg"] as? String == "stopped" })
    }

    @Test func servesOnAUnixSocket() async throws {
        let directory = HeraldProcess.makeDirectory()
        let socket = directory.appendingPathComponent("herald.sock").path
        let process = Process()
        process.executableURL = HeraldProcess.executable
        process.arguments = ["serve", "--db", directory.appendingPathComponent("h.db").path,
                             "--listen", "unix:\(socket)",
                             "--sandbox"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { kill(process.processIdentifier, SIGTERM); process.waitUntilExit() }
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: socket) { usleep(20_000) }
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "--unix-socket", socket, "-d", #"{"to": "a"}"#, "http://herald/v1/messages"]
        let output = Pipe()
        curl.standardOutput = output
        try curl.run()
        let body = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        #expect(body.contains(#""deliveries":1"#), "got: \(body)")
    }
}

@Suite struct ServeStartupTests {
    /// SPEC §22: apps may come from the database later, so no app configured is a warning, not a refusal; a message
    /// for an app nobody configured is still refused.
    @Test func startsWithoutAnyAppAndSaysWhereAppsComeFrom() async throws {
        let herald = try HeraldProcess(arguments: [])
        defer { herald.stop() }
        // The warning comes before "listening", which the start waited for.
        let warning = herald.logLines.first { ($0["msg"] as? String)?.hasPrefix("no app configured") == true }
        #expect(warning?["level"] as? String == "warn")
        #expect((warning?["msg"] as? String)?.contains("herald apps add") == true)
        let reply = try await herald.request("POST", "/v1/messages", body: #"{"to": "token-a", "data": {"k": "v"}}"#)
        #expect(reply.status == 400)
        #expect(reply.text.contains("unknown app"))
    }

    @Test func refusesANonLoopbackListenerWithoutAnAPIToken() throws {
        let directory = HeraldProcess.makeDirectory()
        let result = try runHerald(["serve", "--db", directory.appendingPathComponent("h.db").path,
                                    "--fcm-key", "k", "--listen", "0.0.0.0:0"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--api-token"))
    }

    @Test func unknownFlagIsAUsageError() throws {
        let result = try runHerald(["serve", "--colour"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown option --colour"))
    }

    @Test func flagBeatsEnvironmentWhichBeatsTheConfigFile() throws {
        let directory = HeraldProcess.makeDirectory()
        let config = directory.appendingPathComponent("herald.json")
        try Data(#"{"durability": "bogus-from-file", "fcm_key": "k"}"#.utf8).write(to: config)
        let fromFile = try runHerald(["serve", "--config", config.path,
                                      "--db", directory.appendingPathComponent("h.db").path])
        #expect(fromFile.status == 2)
        #expect(fromFile.stderr.contains("bogus-from-file"))
        let fromEnvironment = try runHerald(["serve", "--config", config.path,
                                             "--db", directory.appendingPathComponent("h.db").path],
                                            environment: ["HERALD_DURABILITY": "bogus-from-env"])
        #expect(fromEnvironment.stderr.contains("bogus-from-env"))
        let fromFlag = try runHerald(["serve", "--config", config.path, "--durability", "bogus-from-flag",
                                      "--db", directory.appendingPathComponent("h.db").path],
                                     environment: ["HERALD_DURABILITY": "bogus-from-env"])
        #expect(fromFlag.stderr.contains("bogus-from-flag"))
    }

    @Test func migrateCreatesTheSchemaAndReportsIt() throws {
        let directory = HeraldProcess.makeDirectory()
        let path = directory.appendingPathComponent("m.db").path
        let first = try runHerald(["migrate", "--db", path])
        #expect(first.status == 0)
        #expect(first.stdout.contains("applied 1"))
        let second = try runHerald(["migrate", "--db", path])
        #expect(second.stdout.contains("nothing to do"))
    }

    @Test func helpDescribesEveryServeFlag() throws {
        let result = try runHerald(["serve", "--help"])
        #expect(result.status == 0)
        for flag in ["--db", "--listen", "--api-token", "--fcm-endpoint", "--fcm-key", "--concurrency",
                     "--durability", "--sandbox"] {
            #expect(result.stdout.contains(flag), "help lacks \(flag)")
        }
    }
}
