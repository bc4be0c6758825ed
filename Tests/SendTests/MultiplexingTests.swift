import Send
import Testing

/// HTTP/2 to a real TLS server (node's http2 module, 100 streams per connection, as FCM): what goes on the wire,
/// counted at the server.
@Suite(.serialized) struct MultiplexingTests {
    @Test func requestsInFlightShareConnectionsUpToTheStreamLimit() async throws {
        let standIn = try H2StandIn(["--delay-ms", "10"])
        let window = 150
        let limit = HTTPClientPool.connectionsNeeded(inFlight: window, multiplexed: true)
        #expect(limit == 3)
        let pool = HTTPClientPool(maxConnectionsPerHost: limit, name: "h2-test", caFile: standIn.caFile)
        defer { pool.shutdown(gracePeriod: 0) }

        // More than the ~1,000 RST_STREAMs after which an nghttp2 server closes a connection with GOAWAY, so that
        // libcurl 7.88's reset of every finished stream (see CCurlFixes) would show as reconnections here.
        let total = 6_000
        let results = await run(pool, total: total, window: window) { message(standIn, $0) }

        #expect(results.count == total)
        #expect(results.allSatisfy { $0.status == 200 && $0.httpVersion == "2" })
        let stats = try await standIn.stats()
        #expect(stats.requests == total)
        #expect(stats.duplicates == 0)
        // ⌈150 ÷ 100⌉ + 1 connections at most, over the whole run: none closed and replaced.
        #expect(stats.sessions <= limit)
        #expect(stats.peakSessionStreams <= HTTPClientPool.streamsPerConnection)
        // Multiplexed for real: far more requests in flight than connections.
        #expect(stats.peakStreams > 2 * stats.sessions)
        #expect(pool.connections <= limit)
        #expect(pool.connections >= 1)
    }

    @Test func aNewAccessTokenReusesTheOpenConnection() async throws {
        let standIn = try H2StandIn(["--delay-ms", "1"])
        let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "h2-test", caFile: standIn.caFile)
        defer { pool.shutdown(gracePeriod: 0) }

        let before = await run(pool, total: 20, window: 10) { message(standIn, $0, authorization: "Bearer first") }
        let after = await run(pool, total: 20, window: 10) {
            message(standIn, 100 + $0, authorization: "Bearer renewed")
        }

        #expect((before + after).allSatisfy { $0.status == 200 })
        let stats = try await standIn.stats()
        #expect(stats.requests == 40)
        #expect(stats.sessions == 1)
    }

    @Test func requestsLostWithTheirConnectionAreNotSentAgain() async throws {
        // Once 40 requests have arrived, the connection gets a GOAWAY naming the last stream received and is
        // closed: the requests in flight on it were received but are never answered. libcurl 7.88 would re-send
        // each of them on a new connection by itself ("Connection died, retrying a fresh connect").
        let standIn = try H2StandIn(["--delay-ms", "50", "--drop-after", "40"])
        let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "h2-test", caFile: standIn.caFile)
        defer { pool.shutdown(gracePeriod: 0) }

        let total = 200
        let results = await run(pool, total: total, window: 60) { message(standIn, $0) }

        let answered = results.filter { $0.status == 200 }.count
        let lost = results.filter { $0.failureReason == "reset" }.count
        #expect(answered + lost == total)
        #expect(lost > 0)
        let stats = try await standIn.stats()
        #expect(stats.duplicates == 0)
        // Every request that reached the server is one the caller got a result for: answered, or lost with the
        // connection (and left to the caller's retry policy).
        #expect(stats.requests <= answered + lost)
        #expect(stats.requests >= answered)
    }
}
