import Foundation
import Queue
import Storage
import Testing

/// `POST /fcm/send` on the real `herald serve`, answered as FCM answers and delivered to a real `herald fcm-sim`,
/// both on ephemeral loopback ports. Requests go through curl so bodies and headers are exactly what an FCM client
/// library sends, including no `Content-Type` at all.
@Suite struct FCMSendIntegrationTests {
    static let serverKey = "sim-key-SECRET-fcmsend"

    func serve(_ simulator: SimulatorProcess, _ arguments: [String] = []) throws -> HeraldProcess {
        try HeraldProcess(arguments: ["--fcm-key", Self.serverKey, "--fcm-endpoint", simulator.endpoint] + arguments)
    }

    func simulator(_ arguments: [String] = []) throws -> SimulatorProcess {
        try SimulatorProcess(["--server-key", Self.serverKey] + arguments)
    }

    /// The Herald message an integer answer names: `SELECT id FROM messages WHERE rowid = ?`.
    func messageID(rowID: Int, in herald: HeraldProcess) throws -> String? {
        let connection = try Connection(path: herald.databasePath, mode: .readOnly)
        return try connection.queryOne("SELECT id FROM messages WHERE rowid = ?", [.integer(Int64(rowID))]) {
            $0.string(0)
        }
    }

    /// The Herald message a multicast answer's `multicast_id` names.
    func messageID(answeredBy reply: RawReply, in herald: HeraldProcess) throws -> String {
        let rowID = try #require(reply.json["multicast_id"] as? Int, "no integer multicast_id in \(reply.body)")
        return try #require(try messageID(rowID: rowID, in: herald))
    }

    func messageCount(in herald: HeraldProcess) throws -> Int? {
        let connection = try Connection(path: herald.databasePath, mode: .readOnly)
        return try connection.queryOne("SELECT count(*) FROM messages") { $0.int(0) }
    }

    // MARK: - JSON

    @Test func aJSONMulticastIsAnsweredLikeFCMAndEachTokenReachesItsEnd() async throws {
        let simulator = try simulator([
            "--alias", "8=unavail-1-8", "--alias", "15=invalid-15", "--alias", "23=canon-23-to-32",
            "--alias", "42=notreg-42",
        ])
        let herald = try serve(simulator)
        let reply = try fcmSend(herald, #"{"registration_ids":["4","8","15","16","23","42"],"data":{"score":"4x8"}}"#)
        #expect(reply.status == 200)
        #expect(reply.headers["content-type"] == "application/json")
        let rowID = try #require(reply.json["multicast_id"] as? Int, "multicast_id must be a JSON integer")
        let id = try #require(try messageID(rowID: rowID, in: herald))
        #expect(reply.json["success"] as? Int == 6)
        #expect(reply.json["failure"] as? Int == 0)
        #expect(reply.json["canonical_ids"] as? Int == 0)
        #expect(reply.json["results"] as? [[String: String]] == (0..<6).map { ["message_id": "\(id):\($0)"] })

        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled == [
            "4": "delivered - 1 -", "8": "delivered - 2 -", "15": "dead InvalidRegistration 1 -",
            "16": "delivered - 1 -", "23": "delivered - 1 32", "42": "dropped NotRegistered 1 -",
        ])
        let requests = try await simulator.requests()
        #expect(requests.first?["tokens"] as? [String] == ["4", "8", "15", "16", "23", "42"])
        #expect(herald.stop() == 0)
        #expect(!herald.log.contains(Self.serverKey))
    }

    @Test func aSingleToIsAMulticastOfOneAndIsDelivered() async throws {
        let simulator = try simulator()
        let herald = try serve(simulator)
        let reply = try fcmSend(herald, #"{"to":"tok-single","priority":"high","data":{"a":"1"}}"#)
        #expect(reply.status == 200)
        let rowID = try #require(reply.json["multicast_id"] as? Int)
        let id = try #require(try messageID(rowID: rowID, in: herald))
        #expect(reply.json["results"] as? [[String: String]] == [["message_id": "\(id):0"]])
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(id))["tok-single"] == "delivered - 1 -")
        let request = try #require(try await simulator.requests().first)
        #expect(request["to"] as? String == "tok-single")
        #expect(request["priority"] as? String == "high")
    }

    @Test func aTopicIsAnsweredWithAnIntegerMessageIDAndDelivered() async throws {
        let simulator = try simulator()
        let herald = try serve(simulator)
        let reply = try fcmSend(herald, #"{"to":"/topics/news","notification":{"title":"goal"}}"#)
        #expect(reply.status == 200)
        #expect(reply.json.keys.sorted() == ["message_id"])
        let rowID = try #require(reply.json["message_id"] as? Int, "a topic's message_id must be a JSON integer")
        let id = try #require(try messageID(rowID: rowID, in: herald))
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(id))["/topics/news"] == "delivered - 1 -")
        #expect(try await simulator.requests().first?["topic"] as? String == "/topics/news")
    }

    @Test func aConditionIsAnsweredLikeATopicAndDelivered() async throws {
        let simulator = try simulator()
        let herald = try serve(simulator)
        let condition = "'dogs' in topics && 'cats' in topics"
        let reply = try fcmSend(herald, #"{"condition":"\#(condition)","data":{"a":"1"}}"#)
        #expect(reply.status == 200)
        let rowID = try #require(reply.json["message_id"] as? Int)
        let id = try #require(try messageID(rowID: rowID, in: herald))
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(id))[condition] == "delivered - 1 -")
        #expect(try await simulator.requests().first?["condition"] as? String == condition)
    }

    // MARK: - Plain text

    @Test func plainTextWithDataKeysIsAnsweredWithAnIDLineAndDelivered() async throws {
        let simulator = try simulator()
        let herald = try serve(simulator)
        let reply = try fcmSend(
            herald, "collapse_key=score_update&time_to_live=108&delay_while_idle=1&data.score=4x8"
                + "&data.time=15:16.2342&data.note=good+game%21&registration_id=42",
            contentType: "application/x-www-form-urlencoded;charset=UTF-8")
        #expect(reply.status == 200)
        #expect(reply.headers["content-type"]?.hasPrefix("text/plain") == true)
        let id = try #require(plainTextID(reply.body))
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(id))["42"] == "delivered - 1 -")
        let message = try await herald.request("GET", "/v1/messages/\(id)").json
        let payload = try #require(message["payload"] as? [String: Any])
        #expect(payload["data"] as? [String: String] == ["score": "4x8", "time": "15:16.2342", "note": "good game!"])
        let request = try #require(try await simulator.requests().first)
        #expect(request["tokens"] as? [String] == ["42"])
        #expect(request["collapse_key"] as? String == "score_update")
        #expect((request["time_to_live"] as? Int).map { $0 <= 108 } == true)
    }

    @Test func withoutAContentTypeTheBodyIsPlainText() async throws {
        let simulator = try simulator()
        let herald = try serve(simulator)
        let reply = try fcmSend(herald, "registration_id=tok-bare&data.a=1", contentType: nil)
        #expect(reply.status == 200)
        let id = try #require(plainTextID(reply.body))
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(id))["tok-bare"] == "delivered - 1 -")
        #expect(try await simulator.requests().first?["tokens"] as? [String] == ["tok-bare"])
    }

    // MARK: - Refusals

    @Test func refusedRequestsAreAnsweredAsFCMDoesAndNothingOfThemIsSent() async throws {
        let simulator = try simulator()
        let herald = try serve(simulator)

        let invalidJSON = try fcmSend(herald, #"{"registration_ids":["a","#)
        #expect(invalidJSON.status == 400)
        let wrongType = try fcmSend(herald, #"{"to":"a","time_to_live":"60"}"#)
        #expect(wrongType.status == 400)
        #expect(wrongType.body.contains("time_to_live"))
        let invalidDataKey = try fcmSend(herald, #"{"registration_ids":["a","b"],"data":{"from":"me"}}"#)
        #expect(invalidDataKey.status == 200)
        #expect(invalidDataKey.json["failure"] as? Int == 2)
        #expect(invalidDataKey.json["results"] as? [[String: String]]
            == [["error": "InvalidDataKey"], ["error": "InvalidDataKey"]])
        let plainDataKey = try fcmSend(herald, "registration_id=a&data.google.x=1", contentType: nil)
        #expect(plainDataKey.status == 200)
        #expect(plainDataKey.body == "Error=InvalidDataKey")
        #expect(try messageCount(in: herald) == 0)

        // A message accepted afterwards is the only one the simulator ever sees.
        let accepted = try fcmSend(herald, #"{"to":"tok-after"}"#)
        let id = try messageID(answeredBy: accepted, in: herald)
        _ = try await herald.waitUntilSettled(id)
        #expect(try await simulator.requests().map { $0["tokens"] as? [String] } == [["tok-after"]])
        #expect(try messageCount(in: herald) == 1)
    }

    @Test func withAnAPITokenAWrongKeyIsA401AndNeverLogged() async throws {
        let simulator = try simulator()
        let apiToken = "herald-api-SECRET-token"
        let herald = try serve(simulator, ["--api-token", apiToken])

        let wrong = try fcmSend(herald, #"{"to":"tok-1"}"#, headers: ["Authorization": "key=guessed-SECRET-key"])
        #expect(wrong.status == 401)
        #expect(!wrong.body.contains("guessed-SECRET-key"))
        let missing = try fcmSend(herald, #"{"to":"tok-1"}"#, headers: [:])
        #expect(missing.status == 401)
        #expect(try messageCount(in: herald) == 0)

        let right = try fcmSend(herald, #"{"to":"tok-1"}"#, headers: ["Authorization": "key=\(apiToken)"])
        #expect(right.status == 200)
        let id = try messageID(answeredBy: right, in: herald)
        let settled = try await herald.request("GET", "/v1/messages/\(id)")
        #expect(settled.status == 401, "the rest of the API still wants Bearer")
        var state = ""
        for _ in 0..<1200 where state != "delivered" {
            let message = try await herald.request(
                "GET", "/v1/messages/\(id)", headers: ["Authorization": "Bearer \(apiToken)"]).json
            state = (message["deliveries"] as? [[String: Any]])?.first?["state"] as? String ?? ""
            if state != "delivered" { try await Task.sleep(nanoseconds: 50_000_000) }
        }
        #expect(state == "delivered")
        #expect(try await simulator.requests().map { $0["to"] as? String } == ["tok-1"])
        #expect(herald.stop() == 0)
        for secret in ["guessed-SECRET-key", apiToken, Self.serverKey] {
            #expect(!herald.log.contains(secret), "\(secret) reached the log")
        }
    }

    // MARK: - Apps

    @Test func xHeraldAppSendsThroughThatAppsEndpoint() async throws {
        let first = try simulator()
        let second = try SimulatorProcess(["--server-key", "second-SECRET-key"])
        let directory = HeraldProcess.makeDirectory()
        let config = directory.appendingPathComponent("herald.json")
        try Data("""
            {"apps": [{"name": "second", "provider": "fcm-legacy", "endpoint": "\(second.endpoint)",
                       "server_key": "second-SECRET-key"}]}
            """.utf8).write(to: config)
        let herald = try serve(first, ["--config", config.path])
        let reply = try fcmSend(herald, #"{"to":"tok-2"}"#, headers: ["X-Herald-App": "second"])
        let id = try messageID(answeredBy: reply, in: herald)
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(id))["tok-2"] == "delivered - 1 -")
        #expect(try await second.requests().map { $0["to"] as? String } == ["tok-2"])
        #expect(try await first.requests().isEmpty)
        #expect(try fcmSend(herald, #"{"to":"tok-2"}"#, headers: ["X-Herald-App": "not an app"]).status == 400)
    }
}

// MARK: - Raw requests

struct RawReply {
    var status: Int
    /// Names lowercased.
    var headers: [String: String]
    var body: String
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
}

/// `POST /fcm/send` with curl: the body byte for byte, `Content-Type` as given or absent (nil), FCM's
/// `Authorization: key=…` header by default.
func fcmSend(
    _ herald: HeraldProcess, _ body: String, contentType: String? = "application/json",
    headers: [String: String] = ["Authorization": "key=some-FCM-server-key"]
) throws -> RawReply {
    let curl = Process()
    curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    // An empty `Content-Type:` makes curl send none; an empty `Expect:` turns off 100-continue.
    var arguments = ["-s", "-i", "--data-binary", "@-", "-H", "Expect:",
                     "-H", contentType.map { "Content-Type: \($0)" } ?? "Content-Type:"]
    for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
    curl.arguments = arguments + [herald.baseURL.appendingPathComponent("fcm/send").absoluteString]
    let input = Pipe()
    let output = Pipe()
    curl.standardInput = input
    curl.standardOutput = output
    try curl.run()
    input.fileHandleForWriting.write(Data(body.utf8))
    try input.fileHandleForWriting.close()
    let raw = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    curl.waitUntilExit()

    guard let end = raw.range(of: "\r\n\r\n") else { return RawReply(status: 0, headers: [:], body: raw) }
    let lines = raw[..<end.lowerBound].components(separatedBy: "\r\n")
    let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    var replyHeaders: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        replyHeaders[line[..<colon].lowercased()] = value
    }
    return RawReply(status: status, headers: replyHeaders, body: String(raw[end.upperBound...]))
}

/// The message id of a plain-text answer `id=<message id>:0`.
func plainTextID(_ body: String) -> String? {
    guard body.hasPrefix("id="), body.hasSuffix(":0") else { return nil }
    return String(body.dropFirst(3).dropLast(2))
}
