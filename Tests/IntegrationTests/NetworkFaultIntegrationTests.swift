import Foundation
import NetworkTestSupport
import OAuth
import Storage
import Testing

/// The real `herald serve` sending FCM v1 over TLS + HTTP/2 to node's `http2` (the stand-in, holding the answers
/// until the fault comes) through a TCP proxy that resets or freezes every connection on command: what a load
/// balancer's restart, a NAT flush or a dead path does to a real network (SPEC §11).
///
/// The fault is played as soon as the stand-in holds a request, not once all have arrived: Herald's request timeout
/// (30 s) runs from the first request on, and on a loaded machine the last may arrive after it, so that the held
/// requests would time out before the fault (and be sent again as timeouts, not as losses).
@Suite(.serialized) struct NetworkFaultIntegrationTests {
    static let total = 400

    struct Rig {
        let standIn: H2StandIn
        let proxy: FaultProxy
        let herald: HeraldProcess
    }

    /// The stand-in, the proxy in front of it, and Herald sending through the proxy (the token endpoint is reached
    /// directly: only messages:send goes through the faults). `standIn`: its arguments beside `--delay-ms 5`.
    func start(_ arguments: [String] = [], standIn standInArguments: [String]? = nil) throws -> Rig {
        // Every request is held (for ten minutes) until `heldThenStopHolding`: whatever the machine's load, the ones
        // held are still in flight when the fault comes; what is sent after it is answered at once.
        let standIn = try H2StandIn(
            ["--delay-ms", "5"] + (standInArguments ?? ["--hold-first", "\(Self.total)", "--hold-ms", "600000"]))
        let proxy = try FaultProxy(targetPort: standIn.port)
        let directory = HeraldProcess.makeDirectory()
        let keyFile = try V1IntegrationTests.writeServiceAccount(
            key: V1IntegrationTests.key, tokenURI: standIn.baseURL + "/token", in: directory, name: "sa.json")
        // No request times out before the fault however loaded the machine is (unless a test says otherwise): the
        // held requests are in flight when it comes.
        let herald = try HeraldProcess(directory: directory, arguments: [
            "--fcm-service-account", keyFile, "--fcm-endpoint", "https://127.0.0.1:\(proxy.port)",
            "--request-timeout", "10m",
        ] + arguments, environment: ["SSL_CERT_FILE": standIn.caFile])
        return Rig(standIn: standIn, proxy: proxy, herald: herald)
    }

    /// `count` single-token messages in one batch.
    func post(_ rig: Rig, count: Int = total) async throws {
        let messages = (0..<count).map { #"{"message":{"token":"fault-\#($0)","data":{"n":"\#($0)"}}}"# }
        let reply = try await rig.herald.request(
            "POST", "/v1/messages/batch", body: #"{"messages":[\#(messages.joined(separator: ","))]}"#)
        #expect(reply.status == 200, "\(reply.text)")
    }

    /// Waits (bounded: a loaded machine may take a while to start sending) until the stand-in holds a request, then
    /// has it answer every later one at once: the fault that comes next finds the held ones in flight (and on a
    /// machine that is not loaded, most of the batch), and nothing sent after it is held.
    func heldThenStopHolding(_ rig: Rig) async throws {
        var received = 0
        for _ in 0..<1_200 {
            received = try await rig.standIn.stats().requests
            if received >= 1 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(received >= 1, "the stand-in received no request before the fault")
        _ = try await rig.standIn.post("/stop-holding", body: "{}")
    }

    /// Waits (bounded) until every delivery is `delivered`; returns how many are.
    func waitForAllDelivered(_ rig: Rig, count: Int = total) async throws -> Int {
        var delivered = 0
        for _ in 0..<1_200 {
            let connection = try Connection(path: rig.herald.databasePath, mode: .readOnly)
            delivered = try connection.queryOne("SELECT count(*) FROM deliveries WHERE state = 'delivered'") {
                Int($0.int64(0))
            } ?? 0
            if delivered == count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return delivered
    }

    /// A metric's value as `/metrics` shows it once the engine's tick has copied the pool's counts (bounded wait).
    func metric(_ rig: Rig, _ series: String, atLeast minimum: Double) async throws -> Double {
        var value = 0.0
        for _ in 0..<600 {
            let text = try await rig.herald.request("GET", "/metrics").text
            value = text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            if value >= minimum { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return value
    }

    func gateClosings(_ rig: Rig) -> [[String: Any]] {
        rig.herald.logLines.filter { $0["msg"] as? String == "app gate closed" }
    }

    @Test func afterEveryConnectionIsResetEveryMessageIsDeliveredAndTheGateClosedOnce() async throws {
        let rig = try start()
        defer { rig.herald.stop() }
        try await post(rig)
        try await heldThenStopHolding(rig)

        let reset = try await rig.proxy.reset()

        #expect(reset >= 1)
        #expect(try await waitForAllDelivered(rig) == Self.total)
        let closings = gateClosings(rig)
        #expect(closings.count == 1, "one fault, one gate: \(closings)")
        #expect(closings.first?["reason"] as? String == "reset")
        let lost = try await metric(
            rig, #"herald_requests_retried_after_connection_loss_total{app="default"}"#, atLeast: 1)
        #expect(lost >= 1)
        let resets = try await metric(
            rig, #"herald_connections_closed_total{app="default",cause="reset"}"#, atLeast: 1)
        #expect(resets >= 1)
        // Only requests that were on a lost connection may have arrived twice.
        let stats = try await rig.standIn.stats()
        #expect(stats.duplicates <= Int(lost))
        #expect(stats.requests - stats.duplicates == Self.total)
    }

    @Test func aFrozenConnectionIsFoundByItsPingAndItsRequestsAreDeliveredOnANewOne() async throws {
        let rig = try start(["--h2-ping-after", "1s", "--h2-ping-timeout", "1s"])
        defer { rig.herald.stop() }
        try await post(rig)
        try await heldThenStopHolding(rig)

        let frozen = try await rig.proxy.freeze()

        #expect(frozen >= 1)
        #expect(try await waitForAllDelivered(rig) == Self.total)
        let pingTimeouts = try await metric(
            rig, #"herald_connections_closed_total{app="default",cause="ping_timeout"}"#, atLeast: 1)
        #expect(pingTimeouts >= 1)
        #expect(try await metric(rig, #"herald_pings_total{app="default"}"#, atLeast: 1) >= 1)
        #expect(try await rig.proxy.stats()["accepted"] ?? 0 > frozen, "a new connection carried the rest")
        let stats = try await rig.standIn.stats()
        #expect(stats.requests - stats.duplicates == Self.total)
    }

    @Test func aRequestRetriedAfterItTimedOutIsCountedAsPossiblyReceivedTwice() async throws {
        // The first request is held past Herald's request timeout (2 s here), its retry answered at once; no PING
        // (its 10-minute quiet time) closes the connection first.
        let rig = try start(
            ["--h2-ping-after", "10m", "--request-timeout", "2s"], standIn: ["--hold-first", "1", "--hold-ms", "600000"])
        defer { rig.herald.stop() }
        try await post(rig, count: 1)

        #expect(try await waitForAllDelivered(rig, count: 1) == 1)
        #expect(try await metric(rig, #"herald_fcm_requests_total{app="default",code="timeout"}"#, atLeast: 1) == 1)
        let retried = try await metric(
            rig, #"herald_requests_retried_after_connection_loss_total{app="default"}"#, atLeast: 1)
        #expect(retried == 1, "the timed-out request may have been received: it is counted")
        #expect(gateClosings(rig).compactMap { $0["reason"] as? String } == ["timeout"])
        let stats = try await rig.standIn.stats()
        #expect(stats.requests == 2 && stats.duplicates == 1, "the stand-in did receive it twice")
    }
}
