import Foundation
import NetworkTestSupport
import Storage
import Testing

/// The real `herald serve` sending FCM legacy (libcurl, HTTP/1.1, a connection per request in flight) to a gateway
/// with a small accept queue (`scripts/small-backlog-fcm.py`: Python's `ThreadingHTTPServer`, 5 in its queue) in
/// bursts: connections open a few at a time and freed ones are reused first (SPEC §11), so no request is left in
/// TCP's SYN retries until it times out and is sent again.
@Suite(.serialized) struct ConnectionRampIntegrationTests {
    static let serverKey = "ramp-key-SECRET"
    static let rounds = 3
    static let burst = 100

    @Test func burstsToASmallAcceptQueueAreDeliveredOnceEach() async throws {
        let gateway = try SmallBacklogFCM(delayMillis: 50)
        // Room for every message of a burst in flight at once: a connection each, all wanted in the same instant.
        let herald = try HeraldProcess(arguments: [
            "--fcm-key", Self.serverKey, "--fcm-endpoint", gateway.endpoint, "--concurrency", "\(2 * Self.burst)",
        ])
        var total = 0
        for round in 0..<Self.rounds {
            // One message, then a pause: the connection it opened is idle when the burst comes.
            try await post(herald, ids: ["\(round)-single"])
            total += 1
            try await waitUntilDelivered(herald, total)
            try await Task.sleep(for: .seconds(1))
            try await post(herald, ids: (0..<Self.burst).map { "\(round)-\($0)" })
            total += Self.burst
            try await waitUntilDelivered(herald, total)
        }

        #expect(try delivered(herald) == total)
        // None timed out waiting for its connection, so none was sent again.
        #expect(try sentMoreThanOnce(herald) == 0)
        let stats = try await gateway.stats()
        #expect(stats.duplicates == 0, "requests received twice")
        #expect(stats.distinct == total)
        #expect(stats.received == total)
    }

    /// One batch of single-token messages, each with its id in `data.id`.
    private func post(_ herald: HeraldProcess, ids: [String]) async throws {
        let messages = ids.map { #"{"to":"ramp-token-\#($0)","data":{"id":"\#($0)"}}"# }
        let reply = try await herald.request(
            "POST", "/v1/messages/batch", body: #"{"messages":[\#(messages.joined(separator: ","))]}"#)
        #expect(reply.status == 200, "\(reply.text)")
    }

    private func delivered(_ herald: HeraldProcess) throws -> Int {
        let connection = try Connection(path: herald.databasePath, mode: .readOnly)
        return try connection.queryOne("SELECT count(*) FROM deliveries WHERE state = 'delivered'") {
            Int($0.int64(0))
        } ?? 0
    }

    private func sentMoreThanOnce(_ herald: HeraldProcess) throws -> Int {
        let connection = try Connection(path: herald.databasePath, mode: .readOnly)
        return try connection.queryOne("SELECT count(*) FROM deliveries WHERE attempts > 1") { Int($0.int64(0)) } ?? 0
    }

    /// Waits (bounded: a request stuck in SYN retries takes up to its 30 s timeout, then a retry) until `count`
    /// deliveries are delivered.
    private func waitUntilDelivered(_ herald: HeraldProcess, _ count: Int) async throws {
        for _ in 0..<1_200 where try delivered(herald) < count {
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(try delivered(herald) == count)
    }
}
