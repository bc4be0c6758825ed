import Foundation
import Testing

/// FCM v1 messages on `POST /v1/messages` of the real `herald serve`: as sent to a v1 app, mapped down for a legacy
/// app, and refused at the door where legacy cannot carry them — each checked at a real `herald fcm-sim`.
@Suite struct V1MessageIntegrationTests {
    @Test func aV1FanOutReachesAV1AppAsSentOneRequestPerToken() async throws {
        let pair = try await V1IntegrationTests().start()
        let herald = pair.herald
        for token in ["u-tok-1", "u-tok-2"] {
            #expect(try await herald.request("PUT", "/v1/tokens/\(token)", body: #"{"user":"u1"}"#).status == 201)
        }
        let message = #"{"data":{"a":"b"},"android":{"ttl":"600s","priority":"high","notification":{"tag":"t"}},"#
            + #""apns":{"payload":{"aps":{"badge":2}}},"webpush":{"data":{"w":"1"}}}"#
        let ids = [
            try await V1IntegrationTests().post(herald, #"{"users":["u1"],"message":\#(message)}"#),
            try await V1IntegrationTests().post(herald, #"{"tokens":["t-1","t-2","t-3"],"message":\#(message)}"#),
        ]
        for id in ids {
            let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
            #expect(!settled.isEmpty && settled.values.allSatisfy { $0 == "delivered - 1 -" }, "\(settled)")
            #expect(try await herald.request("GET", "/v1/messages/\(id)").json["format"] as? String == "v1")
        }
        let requests = try await pair.simulator.requests()
        #expect(Set(requests.compactMap { $0["to"] as? String }) == ["u-tok-1", "u-tok-2", "t-1", "t-2", "t-3"])
        for request in requests {
            let sent = request["message"] as? [String: Any]
            let android = sent?["android"] as? [String: Any]
            #expect(android?["notification"] as? [String: String] == ["tag": "t"])
            #expect(android?["priority"] as? String == "high")
            #expect(((sent?["apns"] as? [String: Any])?["payload"] as? [String: Any]).map { "\($0)" } != nil)
            #expect((sent?["webpush"] as? [String: Any])?["data"] as? [String: String] == ["w": "1"])
            #expect(request["priority"] as? String == "high")
        }
    }

    @Test func aLegacyAppGetsV1MessagesMappedDownAndRefusesWhatItCannotCarry() async throws {
        let simulator = try SimulatorProcess(["--server-key", "k-legacy"])
        let herald = try HeraldProcess(arguments: ["--fcm-key", "k-legacy", "--fcm-endpoint", simulator.endpoint])
        let reply = try await herald.request("POST", "/v1/messages", body: """
            {"message":{"token":"tok-1","data":{"a":"b"},"notification":{"title":"t"},\
            "android":{"ttl":"300s","priority":"high","collapse_key":"ck"}}}
            """)
        #expect(reply.status == 202)
        let id = try #require(reply.json["id"] as? String)
        #expect(HeraldProcess.summary(try await herald.waitUntilSettled(id)) == ["tok-1": "delivered - 1 -"])
        let sent = try #require(try await simulator.requests().first)
        #expect(sent["format"] as? String == "json", "FCM legacy JSON")
        #expect(sent["collapse_key"] as? String == "ck")
        #expect(sent["priority"] as? String == "high")
        let ttl = try #require(sent["time_to_live"] as? Int)
        #expect(ttl <= 300 && ttl >= 290)

        for body in [#"{"message":{"fid":"f-1"}}"#, #"{"message":{"token":"t","webpush":{"data":{"a":"b"}}}}"#] {
            let refused = try await herald.request("POST", "/v1/messages", body: body)
            #expect(refused.status == 400)
            #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "InvalidArgument")
        }
        #expect(try await simulator.requests().count == 1, "nothing refused was queued or sent")
    }
}
