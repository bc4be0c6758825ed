import NetworkTestSupport
import Send
import Testing
import TestSupport

/// Herald's HTTP/2 client against a server that breaks the protocol on purpose (`scripts/h2-misbehaving-server.js`):
/// the client closes the connection with a GOAWAY naming the error, and the request on it fails as `reset`, once.
@Suite(.serialized) struct HTTP2ProtocolErrorTests {
    /// (the server's misbehaviour, the error code the client's GOAWAY must carry).
    static let connectionErrors: [(String, UInt32)] = [
        ("data-on-stream-0", 0x1), ("ping-of-7-bytes", 0x6), ("push-promise", 0x1), ("oversized-frame", 0x6),
        ("bad-hpack", 0x9), ("headers-on-idle-stream", 0x1), ("window-overflow", 0x3),
        ("interrupted-header-block", 0x1),
    ]

    @Test(arguments: connectionErrors)
    func aConnectionErrorEndsTheConnectionWithGoAway(_ mode: String, _ code: UInt32) async throws {
        let (server, pool) = try misbehaving(mode)
        defer { pool.shutdown(gracePeriod: 0) }

        var request = OutboundRequest(url: server.baseURL + "/v1/projects/p/messages:send", body: Array("{}".utf8))
        request.timeoutMillis = 10_000
        let (result, _) = await send(pool, request)

        #expect(result.failureReason == "reset", "\(mode): \(result)")
        #expect(pool.inFlight == 0)
        let goAways = try await framesOnceSettled(server) { $0.type == 7 }.filter { $0.type == 7 }
        #expect(goAways.map(\.code) == [Int(code)], "\(mode)")
        // Sent once: the client does not try the request again on its own.
        #expect(try await server.statsObject()["requests"] as? Int == 1)
    }

    @Test func aRefusedStreamIsSentAgainAndAnswered() async throws {
        let (server, pool) = try misbehaving("rst-refused")
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, request(to: server))

        #expect(result.status == 200)
        #expect(result.body == "{}")
        #expect(try await server.statsObject()["requests"] as? Int == 2)
        #expect(try await server.statsObject()["sessions"] as? Int == 1)
    }

    @Test func aPingIsAnsweredWithItsPayload() async throws {
        let (server, pool) = try misbehaving("ping")
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, request(to: server))

        #expect(result.status == 200)
        let acks = try await framesOnceSettled(server) { $0.type == 6 && $0.flags & 1 == 1 }.filter { $0.type == 6 }
        #expect(acks.map(\.code) == [Int?.some(42)])
    }

    @Test func theClientSendsItsPrefaceSettingsAndWindowFirst() async throws {
        let (server, pool) = try misbehaving("ping")
        defer { pool.shutdown(gracePeriod: 0) }

        _ = await send(pool, request(to: server))

        let frames = try await framesOnceSettled(server) { $0.type == 6 }
        // SETTINGS, WINDOW_UPDATE for the connection, then the server's SETTINGS acknowledged, the request.
        #expect(frames.first?.type == 4 && frames.first?.flags == 0)
        #expect(frames.count > 1 && frames[1].type == 8 && frames[1].stream == 0)
        #expect(frames.contains { $0.type == 4 && $0.flags == 1 })
        #expect(frames.contains { $0.type == 1 && $0.stream == 1 })
    }

    /// A server may allow fewer streams than FCM's 100: no request goes out before its SETTINGS say how many, and
    /// never more at once than they allow.
    @Test func requestsWaitForTheServersSettingsAndKeepToItsStreamLimit() async throws {
        let (server, pool) = try misbehaving("late-settings")
        defer { pool.shutdown(gracePeriod: 0) }

        let statuses = await withTaskGroup(of: Int?.self) { group in
            for index in 0..<6 {
                group.addTask {
                    await send(pool, request(to: server, path: "/\(index)")).result.status
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }

        #expect(statuses == Array(repeating: 200, count: 6))
        let stats = try await server.statsObject()
        #expect(stats["requests"] as? Int == 6)
        #expect(stats["early"] as? Int == 0, "requests before the server's SETTINGS")
        #expect(stats["max_open"] as? Int == 2, "the server allows 2 streams at once")
        #expect(stats["sessions"] as? Int == 1)
    }

    /// A server that never sends its SETTINGS never gets a request: the connection fails at the connect timeout.
    @Test func aServerThatNeverSendsSettingsFailsAtTheConnectTimeout() async throws {
        let (server, pool) = try misbehaving("no-settings")
        defer { pool.shutdown(gracePeriod: 0) }

        var outbound = request(to: server)
        outbound.connectTimeoutMillis = 500
        let (result, _) = await send(pool, outbound)

        #expect(result.failureReason == "timeout", "\(result)")
        #expect(try await server.statsObject()["requests"] as? Int == 0)
    }

    /// A fatal error may come in the same read as answers (here nghttp2's PING flood limit, tripped after three
    /// answers): every request still gets its end — the answered ones their answers, the others `reset` — and none
    /// is left holding its place in the pool.
    @Test func answersReadBeforeAFatalErrorCompleteAndTheRestFail() async throws {
        let (server, pool) = try misbehaving("answers-then-ping-flood")
        defer { pool.shutdown(gracePeriod: 0) }

        let results = Locked<[TransportResult]>([])
        for index in 0..<5 {
            pool.submit(request(to: server, path: "/\(index)")) { result, _ in results.withLock { $0.append(result) } }
        }
        // Bounded, so that a request left without an end fails the test rather than hangs it.
        for _ in 0..<400 where results.withLock({ $0.count }) < 5 { try await Task.sleep(for: .milliseconds(25)) }

        let ended = results.withLock { $0 }
        #expect(ended.count == 5)
        #expect(ended.filter { $0.status == 200 }.count == 3, "\(ended)")
        #expect(ended.filter { $0.failureReason == "reset" }.count == 2, "\(ended)")
        #expect(pool.inFlight == 0)
        #expect(pool.statistics.closed["protocol_error"] == 1)
    }

    /// Header fields past 64 KiB fail that request as `ResponseTooLarge` (not `reset`), and the connection carries on.
    @Test func oversizedResponseHeadersFailTheirRequestAlone() async throws {
        let (server, pool) = try misbehaving("oversized-headers")
        defer { pool.shutdown(gracePeriod: 0) }

        let (oversized, _) = await send(pool, request(to: server))
        let (next, _) = await send(pool, request(to: server))

        #expect(oversized.failureReason == "ResponseTooLarge", "\(oversized)")
        #expect(next.status == 200)
        #expect(try await server.statsObject()["sessions"] as? Int == 1)
    }

    // MARK: - Liveness

    /// A path that went dead (nothing read, PINGs unanswered) is found by a PING long before the request's own
    /// timeout: the connection is closed and the request fails as `reset`, counted as lost with its connection.
    @Test func aSilentConnectionIsClosedWhenItsPingGoesUnanswered() async throws {
        let liveness = HTTP2Liveness(pingAfterMillis: 200, pingTimeoutMillis: 300)
        let (server, pool) = try misbehaving("silent", liveness: liveness)
        defer { pool.shutdown(gracePeriod: 0) }

        var outbound = request(to: server)
        outbound.timeoutMillis = 120_000
        let (result, _) = await send(pool, outbound)

        #expect(result.failureReason == "reset", "\(result)")
        let pings = try await framesOnceSettled(server) { $0.type == 6 }.filter { $0.type == 6 && $0.flags == 0 }
        #expect(pings.count == 1)
        let statistics = pool.statistics
        #expect(statistics.closed["ping_timeout"] == 1)
        #expect(statistics.requestsLost == 1)
        #expect(statistics.pings == 1)
    }

    /// A request that times out makes its connection suspect: the next request waits for a PING's ACK, then goes on
    /// the same connection.
    @Test func aTimedOutRequestMakesItsConnectionSuspectUntilAPingIsAnswered() async throws {
        let (server, pool) = try misbehaving("first-unanswered")
        defer { pool.shutdown(gracePeriod: 0) }

        var first = request(to: server)
        first.timeoutMillis = 300
        let (timedOut, _) = await send(pool, first)
        let (answered, _) = await send(pool, request(to: server))

        #expect(timedOut.failureReason == "timeout")
        #expect(answered.status == 200)
        let frames = try await framesOnceSettled(server) { $0.type == 6 }
        let ping = frames.firstIndex { $0.type == 6 && $0.flags == 0 }
        let secondRequest = frames.lastIndex { $0.type == 1 }
        #expect(ping != nil && secondRequest != nil && ping! < secondRequest!, "the PING comes before the request")
        #expect(try await server.statsObject()["sessions"] as? Int == 1)
        #expect(pool.statistics.pings == 1)
    }

    // MARK: - Helpers

    /// A request of `{}` to the server.
    private func request(to server: H2StandIn, path: String = "/x") -> OutboundRequest {
        OutboundRequest(url: server.baseURL + path, body: Array("{}".utf8))
    }

    /// The misbehaving server in `mode`, and a pool of one connection to it.
    private func misbehaving(
        _ mode: String, liveness: HTTP2Liveness = .standard
    ) throws -> (H2StandIn, HTTP2ClientPool) {
        let server = try H2StandIn(["--mode", mode], script: "scripts/h2-misbehaving-server.js")
        let pool = HTTP2ClientPool(
            maxConnectionsPerHost: 1, http1Connections: 1, name: "h2-test", caFile: server.caFile, liveness: liveness)
        return (server, pool)
    }

    struct Frame {
        var type: Int
        var flags: Int
        var stream: Int
        var code: Int?
    }

    /// Every frame the server received, once at least one holding `awaited` has arrived (the server reads the client's
    /// last frames after the request has completed), or after a few seconds.
    private func framesOnceSettled(_ server: H2StandIn, _ awaited: (Frame) -> Bool) async throws -> [Frame] {
        var frames: [Frame] = []
        for _ in 0..<100 {
            let list = try await server.statsObject()["frames"] as? [[String: Any]] ?? []
            frames = list.map {
                Frame(type: $0["type"] as? Int ?? -1, flags: $0["flags"] as? Int ?? -1,
                      stream: $0["stream"] as? Int ?? -1,
                      code: $0["code"] as? Int)
            }
            if frames.contains(where: awaited) { break }
            try await Task.sleep(for: .milliseconds(30))
        }
        return frames
    }
}
