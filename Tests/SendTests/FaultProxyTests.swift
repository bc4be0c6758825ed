import NetworkTestSupport
import Send
import Testing

/// Herald's HTTP/2 client to the node stand-in through `scripts/tcp-fault-proxy.js`: the proxy carries TLS and HTTP/2
/// untouched, and its faults reach the client as a network's would.
@Suite(.serialized) struct FaultProxyTests {
    @Test func aResetFailsTheRequestsInFlightAndNewOnesGoOnANewConnection() async throws {
        // Answers after 3 s: the requests are still in flight at the stand-in when the proxy resets their connection.
        let standIn = try H2StandIn(["--delay-ms", "3000"])
        let proxy = try FaultProxy(targetPort: standIn.port)
        let pool = HTTP2ClientPool(
            maxConnectionsPerHost: 2, http1Connections: 2, name: "proxy-test", caFile: standIn.caFile)
        defer { pool.shutdown(gracePeriod: 0) }
        let viaProxy: @Sendable (Int) -> OutboundRequest = { index in
            var request = message(standIn, index)
            request.url = "https://127.0.0.1:\(proxy.port)/v1/projects/standin/messages:send"
            return request
        }

        async let lost = run(pool, total: 10, window: 10, request: viaProxy)
        while try await standIn.stats().requests < 10 { try await Task.sleep(for: .milliseconds(10)) }
        let reset = try await proxy.reset()
        let atReset = try await proxy.stats()
        let failed = await lost
        let after = await run(pool, total: 5, window: 5) { viaProxy(100 + $0) }

        #expect(reset >= 1)
        #expect(failed.count == 10)
        #expect(failed.allSatisfy { $0.failureReason == "reset" })
        #expect(after.allSatisfy { $0.status == 200 && $0.httpVersion == "2" })
        let stats = try await proxy.stats()
        #expect((stats["accepted"] ?? 0) > (atReset["accepted"] ?? 0))
        #expect(stats["reset"] == reset)
        // Lost with their connection, not sent again behind the caller's back.
        let standInStats = try await standIn.stats()
        #expect(standInStats.requests == 15)
        #expect(standInStats.duplicates == 0)
    }
}
