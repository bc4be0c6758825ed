import Foundation
import Glibc
@testable import HTTP
import Posix
import Synchronization
import Testing
import TestSupport

/// The real server on an ephemeral 127.0.0.1 port (or a Unix socket in a temporary directory),
/// driven by a raw-socket client.
@Suite struct HTTPServerTests {
    @Test func keepAliveConnectionServesSeveralRequests() throws {
        let (server, address) = try startServer()
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        for index in 1...5 {
            try client.send("GET /request/\(index) HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.body == "/request/\(index)")
            #expect(response.header("Connection") == nil)
        }
        #expect(server.connectionCount == 1)
    }

    @Test func pipelinedRequestsAnsweredFromOtherThreadsComeBackInOrder() throws {
        // The first request is answered last if the server let the handler see them all at once.
        let delays: [String: Double] = ["/1": 0.2, "/2": 0, "/3": 0.05]
        let handler = TestHandler { request, responder in
            let delay = delays[request.target] ?? 0
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                responder.respond(.text(200, request.target))
            }
        }
        let (server, address) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send(
            "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
                + "POST /3 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        let bodies = try (1...3).map { _ in try client.readResponse().body }
        #expect(bodies == ["/1", "/2", "/3"])
    }

    @Test func expectContinueRoundTrip() throws {
        let (server, address) = try startServer()
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("POST /m HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        #expect(try client.read(count: 25) == "HTTP/1.1 100 Continue\r\n\r\n")
        try client.send("hello")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.body == "/m\nhello")
    }

    @Test func expectContinueOverTheLimitGets413WithoutContinue() throws {
        let (server, address) = try startServer(TestHandler(limit: 4) { _, responder in
            responder.respond(HTTPResponse(status: 200))
        })
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("POST /m HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.errorCode == "PayloadTooLarge")
        #expect(response.header("Connection") == "close")
        #expect(try client.readsEndOfStream())
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: slow", "head"),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc", "body"),
    ])
    func slowClientGets408(partial: String, phase: String) throws {
        let (server, address) = try startServer { configuration in
            configuration.headerTimeout = 0.3
            configuration.bodyTimeout = 0.3
        }
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send(partial)
        let response = try client.readResponse()
        #expect(response.status == 408)
        #expect(response.errorCode == "RequestTimeout")
        #expect(response.header("Connection") == "close")
        #expect(try client.readsEndOfStream())
    }

    @Test func idleKeepAliveConnectionIsClosedSilently() throws {
        let (server, address) = try startServer { $0.idleTimeout = 0.3 }
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("GET /once HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(try client.readsEndOfStream())
    }

    @Test func connectionsOverTheLimitGet503AndTheLimitFreesUp() throws {
        let (server, address) = try startServer { $0.maxConnections = 2 }
        defer { server.shutdown(gracePeriod: 1) }
        var first: RawHTTPClient? = try RawHTTPClient(address)
        let second = try RawHTTPClient(address)
        for client in [first!, second] {
            try client.send("GET /held HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        let third = try RawHTTPClient(address)
        let refused = try third.readResponse()
        #expect(refused.status == 503)
        #expect(refused.errorCode == "Unavailable")
        #expect(refused.header("Connection") == "close")
        #expect(refused.header("Retry-After") != nil)
        #expect(try third.readsEndOfStream())

        // Closing one connection makes room; the server notices the close asynchronously, so retry a while.
        first = nil
        var admitted = false
        for _ in 0..<200 where !admitted {
            let client = try RawHTTPClient(address)
            try client.send("GET /again HTTP/1.1\r\nHost: h\r\n\r\n")
            admitted = try client.readResponse().status == 200
            if !admitted { usleep(10_000) }
        }
        #expect(admitted)
        _ = first
    }

    @Test func unixSocketServesAndIsRemovedAtShutdown() throws {
        let directory = TemporaryDirectory(prefix: "herald-http")
        let path = directory.path("h.sock")

        // A socket file left by a dead process must not stop the server from starting.
        let stale = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0)
        var staleAddress = sockaddr_un()
        staleAddress.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &staleAddress.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        _ = withUnsafePointer(to: &staleAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(stale)
        #expect(FileManager.default.fileExists(atPath: path))

        let (server, address) = try startServer(address: .unix(path: path))
        #expect(address == .unix(path: path))
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o660)

        let client = try RawHTTPClient(address)
        try client.send("GET /over-unix HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try client.readResponse().body == "/over-unix")

        server.shutdown(gracePeriod: 1)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func unixSocketFileIsBornWithNoMoreThanItsFinalMode() throws {
        let directory = TemporaryDirectory(prefix: "herald-mode")
        let path = directory.path("m.sock")
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let fd = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }

        // Right after bind, before anything could chmod it, whatever the umask is.
        try Socket.bindUnix(fd, to: address)
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o7777 & ~Socket.unixSocketMode == 0, "born \(String(info.st_mode & 0o7777, radix: 8))")
    }

    @Test func unixSocketPathHoldingARegularFileIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: HTTPServerError.self) { try startServer(address: .unix(path: path)) }
        #expect(FileManager.default.contents(atPath: path) == Data("keep me".utf8))
    }

    @Test func handlerAnsweringFromAnotherThreadOnlyItsFirstAnswerCounts() throws {
        let handler = TestHandler { request, responder in
            Thread {
                responder.respond(.text(200, "first " + request.target))
                responder.respond(.text(500, "second " + request.target))
            }.start()
        }
        let (server, address) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        for target in ["/a", "/b", "/c"] {
            try client.send("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.body == "first \(target)")
        }
    }

    @Test func requestTheHandlerDropsIsAnswered500() throws {
        let (server, address) = try startServer(TestHandler { _, _ in })
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("GET /forgotten HTTP/1.1\r\nHost: h\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 500)
        #expect(response.errorCode == "InternalError")
    }

    @Test func responseForAClosedConnectionIsDroppedAndTheServerCarriesOn() throws {
        let received = Latch()
        let parked = Mutex<[any HTTPResponder]>([])
        let handler = TestHandler { request, responder in
            if request.target == "/park" {
                parked.withLock { $0.append(responder) }
                received.open()
            } else {
                responder.respond(.text(200, "alive"))
            }
        }
        let (server, address) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 1) }
        let gone = try RawHTTPClient(address)
        try gone.send("GET /park HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(received.wait())
        gone.reset()
        // The client is gone; answering it now must not disturb anyone else.
        var closed = false
        for _ in 0..<200 where !closed {
            closed = server.connectionCount == 0
            if !closed { usleep(10_000) }
        }
        #expect(closed)
        parked.withLock { $0.forEach { $0.respond(.text(200, "too late")) } }
        let client = try RawHTTPClient(address)
        try client.send("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try client.readResponse().body == "alive")
    }

    @Test(arguments: [
        ("GARBAGE\r\n\r\n", 400, "BadRequest"),
        ("GET / HTTP/2.0\r\n\r\n", 505, "HTTPVersionNotSupported"),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
         411, "LengthRequired"),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "BadRequest"),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-Big: \(String(repeating: "x", count: 20_000))\r\n\r\n",
         431, "RequestHeaderFieldsTooLarge"),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n", 413, "PayloadTooLarge"),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-Bad: \u{FFFD}\r\n\r\n", 0, ""),
    ])
    func badRequestGetsAnErrorAndCloseWithoutHurtingOthers(raw: String, status: Int, code: String) throws {
        let (server, address) = try startServer()
        defer { server.shutdown(gracePeriod: 1) }
        let bystander = try RawHTTPClient(address)
        try bystander.send("GET /before HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try bystander.readResponse().status == 200)

        let client = try RawHTTPClient(address)
        if status == 0 {
            // U+FFFD is valid UTF-8; swap in bytes that are not.
            try client.send(Array(raw.utf8).map { $0 == 0xEF ? 0xC3 : $0 == 0xBF ? 0x28 : $0 })
        } else {
            try client.send(raw)
        }
        let response = try client.readResponse()
        #expect(response.status == (status == 0 ? 400 : status))
        #expect(response.errorCode == (status == 0 ? "BadRequest" : code))
        #expect(response.header("Connection") == "close")
        #expect(response.header("Content-Type") == "application/json")
        #expect(try client.readsEndOfStream())

        try bystander.send("GET /after HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try bystander.readResponse().body == "/after")
    }

    @Test(arguments: [
        ("HTTP/1.1", "Connection: close\r\n", "close", true),
        ("HTTP/1.0", "", "close", true),
        ("HTTP/1.0", "Connection: keep-alive\r\n", "keep-alive", false),
        ("HTTP/1.1", "", nil, false),
    ] as [(String, String, String?, Bool)])
    func connectionSemanticsOverTheWire(version: String, header: String, answer: String?, closes: Bool) throws {
        let (server, address) = try startServer { $0.idleTimeout = 5 }
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("GET /c \(version)\r\nHost: h\r\n\(header)\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("Connection") == answer)
        if closes {
            #expect(try client.readsEndOfStream())
        } else {
            try client.send("GET /again \(version)\r\nHost: h\r\n\(header)\r\n")
            #expect(try client.readResponse().body == "/again")
        }
    }

    @Test func clientThatHalfClosesStillGetsItsAnswers() throws {
        let (server, address) = try startServer()
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("GET /x HTTP/1.1\r\nHost: h\r\n\r\nGET /y HTTP/1.1\r\nHost: h\r\n\r\n")
        client.finishSending()
        #expect(try client.readResponse().body == "/x")
        #expect(try client.readResponse().body == "/y")
        #expect(try client.readsEndOfStream())
    }

    @Test func headRequestGetsTheLengthButNoBody() throws {
        let (server, address) = try startServer()
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("HEAD /sized HTTP/1.1\r\nHost: h\r\n\r\n")
        let response = try client.readResponse(head: true)
        #expect(response.header("Content-Length") == "6")
        try client.send("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try client.readResponse().body == "/next")
    }

    @Test func largeBodyAndLargeResponseSurvivePartialReadsAndWrites() throws {
        let payload = String(repeating: "0123456789abcdef", count: 65_536)  // 1 MiB
        let handler = TestHandler(limit: 2 << 20) { request, responder in
            responder.respond(HTTPResponse(status: 200, body: request.body + request.body))
        }
        let (server, address) = try startServer(handler)
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: \(payload.utf8.count)\r\n\r\n" + payload)
        let response = try client.readResponse()
        #expect(response.body.utf8.count == 2 * payload.utf8.count)
        #expect(response.body == payload + payload)
    }

    @Test func gracefulShutdownAnswersTheRequestInHandThenRefusesConnections() throws {
        let inHandler = Latch()
        let release = Latch()
        let handler = TestHandler { request, responder in
            guard request.target == "/slow" else { return responder.respond(.text(200, "quick")) }
            inHandler.open()
            Thread {
                _ = release.wait()
                responder.respond(.text(200, "finished"))
            }.start()
        }
        let (server, address) = try startServer(handler)
        let idle = try RawHTTPClient(address)
        try idle.send("GET /warm HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try idle.readResponse().body == "quick")

        let busy = try RawHTTPClient(address)
        try busy.send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(inHandler.wait())

        let stopped = Latch()
        Thread {
            server.shutdown(gracePeriod: 10)
            stopped.open()
        }.start()

        // The idle keep-alive connection is closed, and new connections are refused, while /slow is in hand.
        #expect(try idle.readsEndOfStream())
        var refused = false
        for _ in 0..<500 where !refused {
            do {
                _ = try RawHTTPClient(address)
                usleep(10_000)
            } catch let error as POSIXError where error.code == .ECONNREFUSED {
                refused = true
            }
        }
        #expect(refused)
        #expect(!stopped.wait(seconds: 0.05))

        release.open()
        let response = try busy.readResponse()
        #expect(response.status == 200)
        #expect(response.body == "finished")
        #expect(response.header("Connection") == "close")
        #expect(try busy.readsEndOfStream())
        #expect(stopped.wait())
    }

    @Test func shutdownEndsUnfinishedRequestsWhenTheGracePeriodRunsOut() throws {
        let inHandler = Latch()
        let (server, address) = try startServer(TestHandler { _, responder in
            inHandler.open()
            // Keep the responder alive without answering until long after the grace period.
            DispatchQueue.global().asyncAfter(deadline: .now() + 3) { responder.respond(.text(200, "late")) }
        })
        let client = try RawHTTPClient(address)
        try client.send("GET /never HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(inHandler.wait())
        server.shutdown(gracePeriod: 0.2)
        #expect(try client.readsEndOfStream())
        #expect(server.connectionCount == 0)
    }

    @Test func startingTwiceOrOnABusyPortFails() throws {
        let (server, address) = try startServer()
        defer { server.shutdown(gracePeriod: 1) }
        #expect(throws: HTTPServerError.self) { try server.start() }
        #expect(throws: IOError.self) { try startServer(address: address) }
    }

    @Test func portZeroIsReplacedByTheBoundPort() throws {
        let (server, address) = try startServer()
        defer { server.shutdown(gracePeriod: 1) }
        guard case .tcp(let host, let port) = address else {
            Issue.record("expected a TCP address, got \(address)")
            return
        }
        #expect(host == "127.0.0.1")
        #expect(port > 0)
    }
}
