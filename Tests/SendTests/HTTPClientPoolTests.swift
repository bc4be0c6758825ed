import Dispatch
import Glibc
import HTTP
import NetworkTestSupport
import Send
import Testing
import TestSupport

@Suite struct HTTPClientPoolTests {
    // MARK: - Round trips

    @Test func postRoundTripsBodyHeadersAndStatus() async throws {
        let (server, port) = try startServer(.echo)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        let request = OutboundRequest(
            url: "http://127.0.0.1:\(port)/fcm/send?x=1",
            headers: [("Content-Type", "application/json"), ("Authorization", "key=secret")],
            body: Array(#"{"to":"token-1"}"#.utf8))
        let (result, seconds) = await send(pool, request)

        #expect(result.status == 200)
        #expect(result.body == #"{"to":"token-1"}"#)
        #expect(result.header("x-seen-method") == "POST")
        #expect(result.header("x-seen-target") == "/fcm/send?x=1")
        #expect(result.header("x-seen-content-type") == "application/json")
        #expect(result.header("x-seen-authorization") == "key=secret")
        #expect(result.httpVersion == "1.1")
        #expect(seconds >= 0)
        #expect(pool.inFlight == 0)
    }

    @Test func anHTTPSServerOfferingHTTP2IsSpokenToInHTTP1() async throws {
        let standIn = try H2StandIn(["--delay-ms", "1"])
        let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "h1-test", caFile: standIn.caFile)
        defer { pool.shutdown(gracePeriod: 0) }

        let results = await run(pool, total: 4, window: 2) { message(standIn, $0) }

        #expect(results.allSatisfy { $0.status == 200 && $0.httpVersion == "1.1" })
        #expect(try await standIn.statsObject()["http_versions"] as? [String: Int] == ["1.1": 4])
    }

    @Test func largeBodyGoesWithoutExpectContinue() async throws {
        let (server, port) = try startServer(.echo)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2, maxResponseBytes: 2 << 20)
        defer { pool.shutdown(gracePeriod: 0) }

        // Past the 1 MiB from which curl would otherwise ask for `100 Continue` and wait for it.
        let body = (0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let (result, _) = await send(pool, OutboundRequest(url: "http://127.0.0.1:\(port)/", body: body))

        #expect(result.status == 200)
        #expect(result.header("x-seen-expect") == "-")
        guard case .response(_, _, let echoed, _) = result else { return }
        #expect(echoed == body)
    }

    @Test func emptyBodyIsStillAPost() async throws {
        let (server, port) = try startServer(.echo)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: "http://127.0.0.1:\(port)/"))

        #expect(result.status == 200)
        #expect(result.header("x-seen-method") == "POST")
        #expect(result.body == "")
    }

    @Test func responseHeadersAndErrorStatusAreCaptured() async throws {
        let handler = TestHandler { _, responder in
            responder.respond(.json(503, #"{"error":"Unavailable"}"#, headers: [("Retry-After", "120")]))
        }
        let (server, port) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: "http://127.0.0.1:\(port)/"))

        #expect(result.status == 503)
        #expect(result.header("retry-after") == "120")
        #expect(result.header("content-type") == "application/json")
        #expect(result.body == #"{"error":"Unavailable"}"#)
    }

    @Test func aRequestThatKeepsSomeResponseHeadersGetsThoseOnly() async throws {
        let handler = TestHandler { _, responder in
            responder.respond(.json(503, #"{"error":"Unavailable"}"#, headers: [("Retry-After", "120")]))
        }
        let (server, port) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 1)
        defer { pool.shutdown(gracePeriod: 0) }

        // One at a time, so the second request gets the first one's recycled handle.
        let url = "http://127.0.0.1:\(port)/"
        let (some, _) = await send(pool, OutboundRequest(url: url, keptResponseHeaders: ["retry-after"]))
        let (all, _) = await send(pool, OutboundRequest(url: url))

        #expect(some.header("retry-after") == "120")
        #expect(some.header("content-type") == nil)
        #expect(some.body == #"{"error":"Unavailable"}"#)
        #expect(all.header("retry-after") == "120")
        #expect(all.header("content-type") == "application/json")
    }

    /// A push answer is read up to 64 KiB (SPEC §19): one byte more, or 9 MiB, fails that request as
    /// `ResponseTooLarge` — never `reset`, never taken as an answer.
    @Test(arguments: [HTTPClientPool.pushResponseBytes + 1, 9 << 20])
    func aResponseOverTheLimitFails(_ size: Int) async throws {
        // Answers a body of the size the path names.
        let handler = TestHandler { request, responder in
            let size = Int(request.target.dropFirst()) ?? 0
            responder.respond(HTTPResponse(status: 201, body: [UInt8](repeating: 7, count: size)))
        }
        let (server, port) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 1)
        defer { pool.shutdown(gracePeriod: 0) }

        let url = "http://127.0.0.1:\(port)/"
        let (large, _) = await send(pool, OutboundRequest(url: url + "\(size)"))
        let (fits, _) = await send(pool, OutboundRequest(url: url + "\(HTTPClientPool.pushResponseBytes)"))

        #expect(large.failureReason == "ResponseTooLarge", "\(large)")
        #expect(fits.status == 201)
        #expect(fits.body?.utf8.count == HTTPClientPool.pushResponseBytes)
    }

    @Test func oversizedResponseHeadersFailTheRequest() async throws {
        let handler = TestHandler { _, responder in
            let padding = (0..<80).map { ("X-Pad-\($0)", String(repeating: "a", count: 1_024)) }
            responder.respond(HTTPResponse(status: 201, headers: padding, body: []))
        }
        let (server, port) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 1)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: "http://127.0.0.1:\(port)/"))

        #expect(result.failureReason == "ResponseTooLarge", "\(result)")
    }

    @Test func eachRequestSendsItsOwnHeadersOnAReusedHandle() async throws {
        let (server, port) = try startServer(.echo)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 1)
        defer { pool.shutdown(gracePeriod: 0) }

        // One at a time, so the second and third requests get the first one's recycled handle.
        let url = "http://127.0.0.1:\(port)/"
        let first = await send(pool, OutboundRequest(url: url, headers: [("Authorization", "key=a")]))
        let second = await send(pool, OutboundRequest(url: url, headers: [("Authorization", "key=b")]))
        let third = await send(pool, OutboundRequest(url: url))

        #expect(first.result.header("x-seen-authorization") == "key=a")
        #expect(second.result.header("x-seen-authorization") == "key=b")
        #expect(third.result.header("x-seen-authorization") == "-")
    }

    // MARK: - Concurrency and connection reuse

    @Test func manyConcurrentRequestsCompleteOnceOverAtMostTheConnectionLimit() async throws {
        let count = 500
        let limit = 8
        let serverBox = Locked<HTTPServer?>(nil)
        let peakConnections = Locked(0)
        let handler = TestHandler { request, responder in
            let open = serverBox.withLock { $0?.connectionCount ?? 0 }
            peakConnections.withLock { $0 = max($0, open) }
            responder.respond(HTTPResponse(status: 200, body: request.body))
        }
        let (server, port) = try startServer(handler)
        serverBox.withLock { $0 = server }
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: limit)

        struct Tally: Sendable {
            var completions: [Int]
            var distinct = 0
            var mismatched: [Int] = []
        }
        let tally = Locked(Tally(completions: Array(repeating: 0, count: count)))
        await withCheckedContinuation { (allDone: CheckedContinuation<Void, Never>) in
            for index in 0..<count {
                let request = OutboundRequest(url: "http://127.0.0.1:\(port)/", body: Array("request \(index)".utf8))
                pool.submit(request) { result, _ in
                    let finishedAll = tally.withLock { tally -> Bool in
                        tally.completions[index] += 1
                        if result.body != "request \(index)" { tally.mismatched.append(index) }
                        guard tally.completions[index] == 1 else { return false }
                        tally.distinct += 1
                        return tally.distinct == count
                    }
                    if finishedAll { allDone.resume() }
                }
            }
        }
        let openAfterwards = server.connectionCount
        // Joining the loop thread: any late second completion would have run by now.
        pool.shutdown(gracePeriod: 0)

        let final = tally.withLock { $0 }
        #expect(final.completions.allSatisfy { $0 == 1 })
        #expect(final.mismatched.isEmpty)
        #expect(peakConnections.withLock { $0 } <= limit)
        #expect(peakConnections.withLock { $0 } >= 1)
        #expect(openAfterwards >= 1, "idle connections stay open for reuse")
        #expect(pool.inFlight == 0)
    }

    @Test func completionsCanSubmitTheNextRequest() async throws {
        let (server, port) = try startServer(.echo)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        // Each completion submits the next request from the pool's own thread, as a sender refilling its
        // window does; the chain must neither deadlock on the mailbox nor lose a request.
        let bodies = Locked<[String]>([])
        await withCheckedContinuation { (chainDone: CheckedContinuation<Void, Never>) in
            @Sendable func chain(_ index: Int) {
                let request = OutboundRequest(url: "http://127.0.0.1:\(port)/", body: Array("\(index)".utf8))
                pool.submit(request) { result, _ in
                    bodies.withLock { $0.append(result.body ?? "failed") }
                    if index < 19 { chain(index + 1) } else { chainDone.resume() }
                }
            }
            chain(0)
        }

        #expect(bodies.withLock { $0 } == (0..<20).map(String.init))
    }

    // MARK: - Failures

    @Test func handlerThatNeverAnswersTimesOut() async throws {
        let (server, port) = try startServer(.silent())
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        let request = OutboundRequest(url: "http://127.0.0.1:\(port)/", body: [1, 2, 3], timeoutMillis: 300)
        let (result, _) = await send(pool, request)

        #expect(result.failureReason == "timeout")
        #expect(pool.inFlight == 0)
    }

    @Test func closedPortFailsToConnect() async throws {
        let (fd, port) = refusingPort()
        defer { close(fd) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: "http://127.0.0.1:\(port)/"))

        #expect(result.failureReason == "connect")
    }

    @Test func serverClosingWithoutAnswerIsAReset() async throws {
        let (seen, seenContinuation) = AsyncStream<Void>.makeStream()
        let (server, port) = try startServer(.silent { seenContinuation.yield() })
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        async let outcome = send(pool, OutboundRequest(url: "http://127.0.0.1:\(port)/", body: [1]))
        await next(seen)
        server.shutdown(gracePeriod: 0)
        let (result, _) = await outcome

        #expect(result.failureReason == "reset")
    }

    @Test func aRequestLostWithItsReusedConnectionIsNotSentAgain() async throws {
        // The first request is answered and leaves its connection open for the second, which the server holds until
        // the proxy between them resets the connection. libcurl would send it again on a new connection by itself:
        // the server may have acted on it already.
        let (seen, seenContinuation) = AsyncStream<Void>.makeStream()
        let held = Locked<[any HTTPResponder]>([])
        let handler = TestHandler { request, responder in
            if request.body == Array("first".utf8) { return responder.respond(.text(200, "first")) }
            held.withLock { $0.append(responder) }
            seenContinuation.yield()
        }
        let (server, port) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 0) }
        let proxy = try FaultProxy(targetPort: port)
        let pool = HTTPClientPool(maxConnectionsPerHost: 1)
        defer { pool.shutdown(gracePeriod: 0) }
        let url = "http://127.0.0.1:\(proxy.port)/"

        let (first, _) = await send(pool, OutboundRequest(url: url, body: Array("first".utf8)))
        async let second = send(pool, OutboundRequest(url: url, body: Array("second".utf8), timeoutMillis: 10_000))
        await next(seen)
        let beforeReset = try await proxy.stats()
        try await proxy.reset()
        let (result, _) = await second

        #expect(first.status == 200)
        #expect(beforeReset["accepted"] == 1)
        #expect(result.failureReason == "reset")
        #expect(held.withLock { $0.count } == 1)
    }

    @Test func nonHTTPSchemesAreRefused() async {
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: "file:///etc/passwd"))

        #expect(result.status == nil)
        #expect(result.failureReason != nil)
    }

    // MARK: - Shutdown

    @Test func shutdownCancelsARequestThatHangs() async throws {
        let (seen, seenContinuation) = AsyncStream<Void>.makeStream()
        let (server, port) = try startServer(.silent { seenContinuation.yield() })
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)

        let outcome = Locked<[TransportResult]>([])
        pool.submit(OutboundRequest(url: "http://127.0.0.1:\(port)/", timeoutMillis: 60_000)) { result, _ in
            outcome.withLock { $0.append(result) }
        }
        await next(seen)
        #expect(pool.inFlight == 1)
        pool.shutdown(gracePeriod: 0.1)

        let results = outcome.withLock { $0 }
        #expect(results.count == 1)
        #expect(results.first?.failureReason == "cancelled")
        #expect(pool.inFlight == 0)
    }

    @Test func shutdownLetsAnInFlightRequestFinishWithinTheGracePeriod() async throws {
        let (seen, seenContinuation) = AsyncStream<Void>.makeStream()
        let handler = TestHandler { _, responder in
            seenContinuation.yield()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { responder.respond(.text(200, "late")) }
        }
        let (server, port) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)

        let outcome = Locked<[TransportResult]>([])
        pool.submit(OutboundRequest(url: "http://127.0.0.1:\(port)/")) { result, _ in
            outcome.withLock { $0.append(result) }
        }
        await next(seen)
        pool.shutdown(gracePeriod: 30)

        let results = outcome.withLock { $0 }
        #expect(results.count == 1)
        #expect(results.first?.body == "late")
    }

    @Test func submitAfterShutdownFailsAtOnce() {
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)
        pool.shutdown(gracePeriod: 0)

        let outcome = Locked<[TransportResult]>([])
        // Nothing listens there; the request must not even be attempted.
        pool.submit(OutboundRequest(url: "http://127.0.0.1:9/")) { result, _ in outcome.withLock { $0.append(result) } }

        let results = outcome.withLock { $0 }
        #expect(results.count == 1)
        #expect(results.first?.failureReason == "cancelled")
        #expect(pool.inFlight == 0)
        pool.shutdown(gracePeriod: 0)
    }

    @Test func shutdownFromACompletionDoesNotDeadlock() async throws {
        let (server, port) = try startServer(.echo)
        defer { server.shutdown(gracePeriod: 0) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2)

        let (result, _) = await withCheckedContinuation { continuation in
            pool.submit(OutboundRequest(url: "http://127.0.0.1:\(port)/")) { result, seconds in
                pool.shutdown(gracePeriod: 0)
                continuation.resume(returning: (result, seconds))
            }
        }
        #expect(result.status == 200)

        let after = Locked<[TransportResult]>([])
        pool.submit(OutboundRequest(url: "http://127.0.0.1:\(port)/")) { result, _ in
            after.withLock { $0.append(result) }
        }
        #expect(after.withLock { $0 }.first?.failureReason == "cancelled")
    }
}
