import Foundation
import Testing

/// `send_at` and cancelling (SPEC §23) through the real `herald serve` and `herald fcm-sim`.
@Suite struct ScheduleIntegrationTests {
    func serve(_ simulator: SimulatorProcess) throws -> HeraldProcess {
        try HeraldProcess(arguments: ["--fcm-key", "sim-key", "--fcm-endpoint", simulator.endpoint])
    }

    @Test func aScheduledMessageIsSentAtItsTimeAndACancelledOneNever() async throws {
        let simulator = try SimulatorProcess()
        let herald = try serve(simulator)
        // Two messages due at the same time, one cancelled before it. The cancel must come first: on a machine too
        // loaded for that, the round is given up and tried again further ahead (new tokens, as its messages may be
        // sent).
        var (id, cancelledID, sendAt, round) = ("", "", Int64(0), 0)
        for lead: Int64 in [5_000, 20_000, 60_000] {
            round += 1
            sendAt = Int64(Date().timeIntervalSince1970 * 1000) + lead
            let rfc3339 = ISO8601DateFormatter.string(
                from: Date(timeIntervalSince1970: Double(sendAt) / 1000), timeZone: TimeZone(secondsFromGMT: 3600)!,
                formatOptions: [.withInternetDateTime, .withFractionalSeconds])
            let batch = try await herald.request("POST", "/v1/messages/batch", body: """
                {"messages": [{"to": "later-\(round)", "send_at": \(sendAt)},
                              {"to": "cancelled-\(round)", "send_at": "\(rfc3339)"}]}
                """)
            let results = try #require(batch.json["results"] as? [[String: Any]])
            (id, cancelledID) = (try #require(results[0]["id"] as? String), try #require(results[1]["id"] as? String))
            let cancel = try await herald.request("DELETE", "/v1/messages/\(cancelledID)")
            #expect(cancel.status == 200)
            if cancel.json["cancelled"] as? Int == 1 { break }
            #expect(lead < 60_000, "the cancel never came before send_at")
        }
        #expect(try await herald.request("DELETE", "/v1/messages/01NOSUCHMESSAGE").status == 404)

        let message = try await herald.waitUntilSettled(id)
        #expect((message["send_at"] as? Int).map(Int64.init) == sendAt)
        #expect(HeraldProcess.summary(message)["later-\(round)"] == "delivered - 1 -")
        let requests = try await simulator.requests()
        let sent = try #require(requests.first { ($0["tokens"] as? [String]) == ["later-\(round)"] })
        let at = try #require(sent["at"] as? Int)
        #expect(Int64(at) >= sendAt, "sent \(Int64(at) - sendAt) ms before its send_at")
        #expect(!requests.contains { ($0["tokens"] as? [String])?.contains("cancelled-\(round)") == true },
                "the cancelled message, due at the same time, reached the provider")
        let cancelled = try await herald.request("GET", "/v1/messages/\(cancelledID)").json
        #expect(HeraldProcess.summary(cancelled)["cancelled-\(round)"] == "dropped Cancelled 0 -")
        #expect(cancelled["cancelled_at"] as? Int != nil)
        #expect(herald.stop() == 0)
    }

    @Test func moreThanThirtyDaysAheadIsRefusedInEveryDialect() async throws {
        let simulator = try SimulatorProcess()
        let herald = try serve(simulator)
        let late = Int64(Date().timeIntervalSince1970 * 1000) + 31 * 86_400_000

        let legacy = try await herald.request("POST", "/v1/messages", body: #"{"to": "t", "send_at": \#(late)}"#)
        #expect(legacy.status == 400)
        let legacyError = try #require(legacy.json["error"] as? [String: Any])
        #expect(legacyError["code"] as? String == "InvalidParameters")
        #expect((legacyError["message"] as? String)?.contains("send_at") == true)

        let v1 = try await herald.request(
            "POST", "/v1/messages", body: #"{"message": {"token": "t"}, "send_at": \#(late)}"#)
        #expect(v1.status == 400)
        #expect((v1.json["error"] as? [String: Any])?["code"] as? String == "InvalidArgument")

        let batch = try await herald.request(
            "POST", "/v1/messages/batch", body: #"{"messages": [{"to": "t", "send_at": \#(late)}]}"#)
        #expect(batch.status == 200)
        let item = try #require((batch.json["results"] as? [[String: Any]])?.first?["error"] as? [String: Any])
        #expect((item["message"] as? String)?.contains("send_at") == true)

        let fcmSend = try await herald.request("POST", "/fcm/send", body: #"{"to": "t", "send_at": \#(late)}"#)
        #expect(fcmSend.status == 400)
        #expect(fcmSend.text.contains("send_at"))

        let messagesSend = try await herald.request(
            "POST", "/v1/projects/demo/messages:send", body: #"{"message": {"token": "t"}, "send_at": \#(late)}"#)
        #expect(messagesSend.status == 400)
        let v1Error = try #require(messagesSend.json["error"] as? [String: Any])
        #expect(v1Error["status"] as? String == "INVALID_ARGUMENT")
        #expect((v1Error["message"] as? String)?.contains("'send_at'") == true)

        let status = try runHerald(["status", "--json", "--db", herald.databasePath])
        #expect(status.stdout.contains(#""scheduled_messages":0"#), "nothing was stored")
        #expect(herald.stop() == 0)
    }
}
