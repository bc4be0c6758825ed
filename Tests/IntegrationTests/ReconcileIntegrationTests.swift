import Foundation
import Queue
import Storage
import Testing

/// FCM's answers reach the token registry and the feed, end to end through the simulator.
@Suite struct ReconcileIntegrationTests {
    @Test func officialExampleUpdatesTheRegistryAndTheFeed() async throws {
        let simulator = try SimulatorProcess(DeliveryIntegrationTests.officialAliases)
        let herald = try HeraldProcess(arguments: [
            "--fcm-key", DeliveryIntegrationTests.serverKey, "--fcm-endpoint", simulator.endpoint,
        ])
        let users = ["4": "ana", "8": "ben", "15": "cid", "16": "dee", "23": "eve", "42": "fay"]
        for (token, user) in users {
            #expect(try await herald.request("PUT", "/v1/tokens/\(token)",
                                             body: #"{"user": "\#(user)"}"#).status == 201)
        }
        let reply = try await herald.request("POST", "/v1/messages",
                                             body: #"{"users": ["ana", "ben", "cid", "dee", "eve", "fay"]}"#)
        #expect(reply.json["deliveries"] as? Int == 6)
        let id = try #require(reply.json["id"] as? String)
        let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id))
        #expect(settled["8"] == "delivered - 2 -", "8 is delivered on a retry")
        #expect(settled["15"] == "dead InvalidRegistration 1 -")

        #expect(try await herald.request("GET", "/v1/tokens/42").status == 404, "42 is deleted")
        #expect(try await herald.request("GET", "/v1/tokens/23").status == 404, "23 is replaced")
        #expect(try await herald.request("GET", "/v1/tokens/32").json["user"] as? String == "eve", "32 keeps 23's user")
        #expect(try await herald.request("GET", "/v1/tokens/15").json["user"] as? String == "cid",
                "a dead letter leaves the token registered: an operator decides")

        let feed = try await herald.request("GET", "/v1/token-events?after=0&limit=10").json
        let events = (feed["events"] as? [[String: Any]] ?? []).map {
            let replacement = ($0["replacement"] as? String).map { " → \($0)" } ?? ""
            return "\($0["kind"] as? String ?? "") \($0["token"] as? String ?? "")\(replacement)"
        }
        #expect(events.sorted() == ["deleted 42", "replaced 23 → 32"])
        let next = try #require(feed["next"] as? Int)
        let after = try await herald.request("GET", "/v1/token-events?after=\(next)").json
        #expect((after["events"] as? [Any])?.isEmpty == true)
        #expect(after["next"] as? Int == next)

        // The next message to eve's user goes to the canonical token; none goes to the deleted one.
        let again = try await herald.request("POST", "/v1/messages", body: #"{"users": ["eve", "fay"]}"#)
        #expect(again.json["deliveries"] as? Int == 1)
        let second = HeraldProcess.summary(try await herald.waitUntilSettled(try #require(again.json["id"] as? String)))
        #expect(second == ["32": "delivered - 1 -"])
    }

    @Test func tokenEventsRejectsABadCursor() async throws {
        let herald = try HeraldProcess(paused: true)
        #expect(try await herald.request("GET", "/v1/token-events?after=-1").status == 400)
        #expect(try await herald.request("GET", "/v1/token-events?limit=5000").status == 400)
    }
}
