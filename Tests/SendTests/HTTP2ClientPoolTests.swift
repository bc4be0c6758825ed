import Foundation
import Glibc
import HTTP
import NetworkTestSupport
import Send
import Testing
import TestSupport

/// Herald's own HTTP/2 client against a real TLS + HTTP/2 server (node's http2 module, 100 streams per connection,
/// as FCM): what goes on the wire, counted at the server.
@Suite(.serialized) struct HTTP2ClientPoolTests {
    private func pool(
        _ standIn: H2StandIn, connections: Int = 2, maxResponseBytes: Int = HTTPClientPool.pushResponseBytes
    ) -> HTTP2ClientPool {
        HTTP2ClientPool(
            maxConnectionsPerHost: connections, maxResponseBytes: maxResponseBytes, http1Connections: 4,
            name: "h2-test", caFile: standIn.caFile)
    }

    // MARK: - Multiplexing

    @Test func requestsInFlightShareConnectionsUpToTheStreamLimit() async throws {
        let standIn = try H2StandIn(["--delay-ms", "10"])
        let window = 150
        let limit = HTTPClientPool.connectionsNeeded(inFlight: window, multiplexed: true)
        let pool = pool(standIn, connections: limit)
        defer { pool.shutdown(gracePeriod: 0) }

        let total = 6_000
        let results = await run(pool, total: total, window: window) { message(standIn, $0) }

        #expect(results.count == total)
        #expect(results.allSatisfy { $0.status == 200 && $0.httpVersion == "2" })
        let stats = try await standIn.stats()
        #expect(stats.requests == total)
        #expect(stats.duplicates == 0)
        #expect(stats.sessions <= limit)
        #expect(stats.peakSessionStreams <= HTTPClientPool.streamsPerConnection)
        #expect(stats.peakStreams > 2 * stats.sessions)
        #expect(pool.connections <= limit)
        #expect(pool.connections >= 1)
        #expect(pool.inFlight == 0)
    }

    @Test func aNewAccessTokenReusesTheOpenConnection() async throws {
        let standIn = try H2StandIn(["--delay-ms", "1"])
        let pool = pool(standIn)
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

    // MARK: - What each request carries

    @Test func eachRequestSendsItsOwnHeadersAndBody() async throws {
        let standIn = try H2StandIn()
        let pool = pool(standIn, connections: 1)
        defer { pool.shutdown(gracePeriod: 0) }

        // One at a time on one connection, so each request after the first could only go wrong by reusing what
        // the one before it built (its header fields, its body).
        let url = standIn.baseURL + "/echo?x=1"
        let first = await send(pool, OutboundRequest(
            url: url, headers: [("Content-Type", "application/json"), ("Authorization", "Bearer a")],
            body: Array("first body".utf8)))
        let second = await send(pool, OutboundRequest(
            url: url, headers: [("Content-Type", "application/json"), ("Authorization", "Bearer b")],
            body: Array("second".utf8)))
        let third = await send(pool, OutboundRequest(url: url, headers: [("X-Other", "1")], body: Array("3".utf8)))

        #expect(first.result.status == 200)
        #expect(first.result.httpVersion == "2")
        #expect(first.result.body == "first body")
        #expect(first.result.header("x-seen-method") == "POST")
        #expect(first.result.header("x-seen-path") == "/echo?x=1")
        #expect(first.result.header("x-seen-authorization") == "Bearer a")
        #expect(first.result.header("x-seen-content-type") == "application/json")
        #expect(first.result.header("x-seen-content-length") == "10")
        #expect(second.result.body == "second")
        #expect(second.result.header("x-seen-authorization") == "Bearer b")
        #expect(second.result.header("x-seen-content-length") == "6")
        #expect(third.result.body == "3")
        #expect(third.result.header("x-seen-authorization") == "-")
        #expect(third.result.header("x-seen-content-type") == "-")
        #expect(third.result.header("x-seen-headers") == "content-length,x-other")
        #expect(first.seconds >= 0)
    }

    @Test func aRequestThatKeepsSomeResponseHeadersGetsThoseOnly() async throws {
        let standIn = try H2StandIn()
        let pool = pool(standIn, connections: 1)
        defer { pool.shutdown(gracePeriod: 0) }

        let url = standIn.baseURL + "/echo"
        let (some, _) = await send(pool, OutboundRequest(url: url, body: [1], keptResponseHeaders: ["retry-after"]))
        let (all, _) = await send(pool, OutboundRequest(url: url, body: [1]))

        #expect(some.header("retry-after") == "7")
        #expect(some.header("x-seen-method") == nil)
        #expect(all.header("retry-after") == "7")
        #expect(all.header("x-seen-method") == "POST")
    }

    /// A push answer is read up to 64 KiB (SPEC §19): one byte more, or 9 MiB, fails that request as
    /// `ResponseTooLarge` (never `reset`, never taken as an answer), and the connection carries on.
    @Test(arguments: [HTTPClientPool.pushResponseBytes + 1, 9 << 20])
    func aResponseOverTheLimitFailsAndTheConnectionCarriesOn(_ size: Int) async throws {
        let standIn = try H2StandIn()
        let pool = pool(standIn, connections: 1)
        defer { pool.shutdown(gracePeriod: 0) }

        let url = standIn.baseURL + "/echo"
        let (large, _) = await send(pool, OutboundRequest(url: url, body: [UInt8](repeating: 7, count: size)))
        let limit = [UInt8](repeating: 8, count: HTTPClientPool.pushResponseBytes)
        let (fits, _) = await send(pool, OutboundRequest(url: url, body: limit))

        #expect(large.failureReason == "ResponseTooLarge")
        #expect(fits.body == String(decoding: limit, as: UTF8.self))
        #expect(try await standIn.stats().sessions == 1)
    }

    @Test func aResponseLargerThanTheWindowsArrivesWhole() async throws {
        // 3 MiB each way: the request body needs the server's WINDOW_UPDATEs (its windows start at 64 KiB), the
        // response needs the client's (its stream window is 1 MiB), on one connection.
        let standIn = try H2StandIn()
        let pool = pool(standIn, connections: 1, maxResponseBytes: 4 << 20)
        defer { pool.shutdown(gracePeriod: 0) }

        let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) }
        async let first = send(pool, OutboundRequest(url: standIn.baseURL + "/echo", body: body))
        async let second = send(pool, OutboundRequest(url: standIn.baseURL + "/echo", body: Array(body.reversed())))
        let (one, two) = await (first.result, second.result)

        guard case .response(200, _, let oneBody, "2") = one, case .response(200, _, let twoBody, "2") = two else {
            Issue.record("\(one) \(two)")
            return
        }
        #expect(oneBody == body)
        #expect(twoBody == Array(body.reversed()))
        #expect(try await standIn.stats().sessions == 1)
    }

    // MARK: - Bounds

    /// A pool keeps at most `maxConnections` to all hosts together: a host that needs one gets the place of the
    /// connection idle longest, elsewhere.
    @Test func theConnectionIdleLongestMakesRoomForAnotherHost() async throws {
        let first = try H2StandIn()
        let second = try H2StandIn()
        // Each stand-in has a certificate of its own: the pool trusts both.
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ca-\(UUID().uuidString).pem")
        let certificates = try [first, second].map { try String(contentsOfFile: $0.caFile, encoding: .utf8) }
        try certificates.joined().write(to: ca, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: ca) }
        let pool = HTTP2ClientPool(
            maxConnectionsPerHost: 2, maxConnections: 1, http1Connections: 1, name: "h2-test", caFile: ca.path)
        defer { pool.shutdown(gracePeriod: 0) }

        let (one, _) = await send(pool, message(first, 1))
        let (two, _) = await send(pool, message(second, 2))

        #expect(one.status == 200 && two.status == 200)
        #expect(pool.connections == 1)
        var open = -1
        for _ in 0..<100 {
            open = try await first.statsObject()["open_sessions"] as? Int ?? -1
            if open == 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(open == 0, "the first host's connection was closed for the second's")
    }

    // MARK: - GOAWAY and lost connections

    @Test func requestsAboveAGracefulGoAwayAreSentAgainUnseen() async throws {
        // After 40 requests the server says GOAWAY naming the last stream it received and still answers up to it,
        // as Google does when a connection has lived long enough. The streams above were never processed: the pool
        // sends them again on a new connection, and the caller sees every request answered once.
        let standIn = try H2StandIn(["--delay-ms", "30", "--goaway-after", "40"])
        let pool = pool(standIn)
        defer { pool.shutdown(gracePeriod: 0) }

        let total = 300
        let results = await run(pool, total: total, window: 80) { message(standIn, $0) }

        #expect(results.count == total)
        #expect(results.allSatisfy { $0.status == 200 })
        let stats = try await standIn.stats()
        #expect(stats.requests == total)
        #expect(stats.duplicates == 0)
        #expect(stats.sessions == 2)
    }

    @Test func requestsLostWithTheirConnectionAreNotSentAgain() async throws {
        // Once 40 requests have arrived, the connection gets a GOAWAY naming the last stream received and is
        // closed: the requests received on it are never answered and fail as `reset` (maybe processed: the
        // caller's retry policy decides); those above the last stream id were refused unprocessed, and are sent
        // again.
        let standIn = try H2StandIn(["--delay-ms", "50", "--drop-after", "40"])
        let pool = pool(standIn)
        defer { pool.shutdown(gracePeriod: 0) }

        let total = 200
        let results = await run(pool, total: total, window: 60) { message(standIn, $0) }

        let answered = results.filter { $0.status == 200 }.count
        let lost = results.filter { $0.failureReason == "reset" }.count
        #expect(answered + lost == total)
        #expect(lost > 0)
        let stats = try await standIn.stats()
        #expect(stats.duplicates == 0)
        // Every request that reached the server is one the caller got a result for, and every one it reported
        // lost had reached the server: none of the refused ones were charged.
        #expect(stats.requests == answered + lost)
    }

    @Test func refusedStreamsAreSentAgainAndAnsweredOnce() async throws {
        // Every 7th request is refused unprocessed (REFUSED_STREAM): the pool sends it again at once, and the caller
        // sees it answered, once.
        let standIn = try H2StandIn(["--delay-ms", "5", "--refuse-every", "7"])
        let pool = pool(standIn)
        defer { pool.shutdown(gracePeriod: 0) }

        let total = 500
        let results = await run(pool, total: total, window: 60) { message(standIn, $0) }

        #expect(results.count == total)
        #expect(results.allSatisfy { $0.status == 200 })
        let stats = try await standIn.stats()
        #expect(stats.refused >= total / 7)
        #expect(stats.requests == total)
        #expect(stats.duplicates == 0)
        #expect(pool.inFlight == 0)
    }

    // MARK: - Failures

    @Test func aRequestThatOutlivesItsTimeoutFails() async throws {
        let standIn = try H2StandIn(["--delay-ms", "5000"])
        let pool = pool(standIn)
        defer { pool.shutdown(gracePeriod: 0) }

        var request = message(standIn, 1)
        request.timeoutMillis = 300
        let (result, seconds) = await send(pool, request)

        #expect(result.failureReason == "timeout")
        #expect(seconds < 4)
        #expect(pool.inFlight == 0)
    }

    @Test func aServerThatStopsAnsweringTimesEveryRequestOut() async throws {
        // 40 requests in flight on a server that takes them and never answers: each fails as `timeout`, once, and
        // the pool is empty afterwards.
        let standIn = try H2StandIn(["--delay-ms", "600000"])
        let pool = pool(standIn)
        defer { pool.shutdown(gracePeriod: 0) }

        let results = await run(pool, total: 40, window: 40) { index in
            var request = message(standIn, index)
            request.timeoutMillis = 400
            return request
        }

        #expect(results.count == 40)
        #expect(results.allSatisfy { $0.failureReason == "timeout" })
        #expect(pool.inFlight == 0)
        #expect(try await standIn.stats().requests == 40)
    }

    @Test func aRefusedConnectionFailsAsConnect() async throws {
        let (fd, port) = refusingPort()
        defer { close(fd) }
        let pool = HTTP2ClientPool(maxConnectionsPerHost: 2, http1Connections: 2, name: "h2-test", caFile: nil)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: "https://127.0.0.1:\(port)/"))

        #expect(result.failureReason == "connect")
    }

    @Test func anUntrustedCertificateFailsTheHandshake() async throws {
        let standIn = try H2StandIn()
        // The system's CAs, which do not include the stand-in's self-signed certificate.
        let pool = HTTP2ClientPool(maxConnectionsPerHost: 2, http1Connections: 2, name: "h2-test", caFile: nil)
        defer { pool.shutdown(gracePeriod: 0) }
        let trusting = HTTP2ClientPool(
            maxConnectionsPerHost: 2, http1Connections: 2, name: "h2-test", caFile: standIn.caFile)
        defer { trusting.shutdown(gracePeriod: 0) }

        let (refused, _) = await send(pool, message(standIn, 1))
        // A certificate for 127.0.0.1 does not name "localhost".
        let (misnamed, _) = await send(trusting, OutboundRequest(
            url: "https://localhost:\(standIn.port)/v1/projects/standin/messages:send", body: [1]))

        #expect(refused.failureReason?.hasPrefix("TLS") == true)
        #expect(misnamed.failureReason?.hasPrefix("TLS") == true)
        #expect(try await standIn.stats().requests == 0)
    }

    @Test func requestsSubmittedTogetherEachGetTheirOwnAnswerOnce() async throws {
        let standIn = try H2StandIn(["--delay-ms", "5"])
        let pool = pool(standIn)
        let requests = (0..<250).map { index in
            OutboundRequest(url: standIn.baseURL + "/echo", headers: [], body: Array("body-\(index)".utf8))
        }

        let answers = await sendTogether(pool, requests)

        #expect(answers.count == requests.count)
        #expect(answers.allSatisfy { index, result in result.status == 200 && result.body == "body-\(index)" })
        #expect(pool.inFlight == 0)
        pool.shutdown(gracePeriod: 0)
        let late = await sendTogether(pool, Array(requests.prefix(3)))
        #expect(late.count == 3 && late.values.allSatisfy { $0.failureReason == "cancelled" })
    }

    /// Submits `requests` in one call; every answer by the request's index (a second answer would trap).
    private func sendTogether(_ pool: HTTP2ClientPool, _ requests: [OutboundRequest]) async -> [Int: TransportResult] {
        await withCheckedContinuation { continuation in
            let answers = Locked<[Int: TransportResult]>([:])
            pool.submit(requests.enumerated().map { index, request in
                (request, { result, _ in
                    let all = answers.withLock { answers -> [Int: TransportResult]? in
                        precondition(answers.updateValue(result, forKey: index) == nil, "\(index) answered twice")
                        return answers.count == requests.count ? answers : nil
                    }
                    if let all { continuation.resume(returning: all) }
                })
            })
        }
    }

    @Test func shutdownCancelsWhatIsInFlight() async throws {
        let standIn = try H2StandIn(["--delay-ms", "5000"])
        let pool = pool(standIn)

        async let pending = send(pool, message(standIn, 1))
        while pool.inFlight == 0 { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(200))
        pool.shutdown(gracePeriod: 0)
        let (result, _) = await pending

        #expect(result.failureReason == "cancelled")
        let (late, _) = await send(pool, message(standIn, 2))
        #expect(late.failureReason == "cancelled")
    }

    // MARK: - HTTP/1.1

    @Test func aServerWithoutHTTP2GetsHTTP1() async throws {
        let standIn = try H2StandIn(["--no-h2", "1"])
        let pool = pool(standIn)
        defer { pool.shutdown(gracePeriod: 0) }

        let results = await run(pool, total: 5, window: 5) { message(standIn, $0) }

        #expect(results.allSatisfy { $0.status == 200 && $0.httpVersion == "1.1" })
        #expect(try await standIn.stats().requests == 5)
    }

    @Test func aCleartextURLGoesOverHTTP1() async throws {
        let (server, port) = try startServer(.echo)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTP2ClientPool(maxConnectionsPerHost: 2, http1Connections: 2, name: "h2-test", caFile: nil)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(
            url: "http://127.0.0.1:\(port)/fcm/send", headers: [("Authorization", "key=a")], body: Array("b".utf8)))

        #expect(result.status == 200)
        #expect(result.httpVersion == "1.1")
        #expect(result.header("x-seen-authorization") == "key=a")
        #expect(pool.inFlight == 0)
    }
}
