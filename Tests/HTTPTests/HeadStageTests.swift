import Foundation
import Glibc
@testable import HTTP
import Synchronization
import Testing
import TestSupport

/// What the server decides from a request's head alone: the handler's `admit`, the Host rule, and the
/// server-wide budget for request bodies. Each refusal comes before `100 Continue` and before any body byte
/// is read.
@Suite struct HeadStageTests {
    /// What a guarded handler saw.
    private final class Seen: Sendable {
        let heads = Mutex<[String]>([])
        let handledCount = Atomic<Int>(0)
        var handled: Int { handledCount.load(ordering: .relaxed) }
    }

    /// A handler that refuses `/private` from the head, counting what reaches `handle`.
    private static func guarded(_ seen: Seen) -> TestHandler {
        TestHandler(limit: 32 << 20, onHead: { head in
            seen.heads.withLock { $0.append("\(head.method) \(head.path) \(head.body.count)") }
            guard head.pathSegments.first == "private" else { return nil }
            return .json(401, #"{"error":{"code":"Unauthorized","message":"no"}}"#)
        }) { request, responder in
            seen.handledCount.add(1, ordering: .relaxed)
            responder.respond(.text(200, request.target))
        }
    }

    @Test func refusedHeadIsAnsweredAtOnceWithoutContinueAndTheConnectionCloses() throws {
        let seen = Seen()
        let (server, address) = try startServer(Self.guarded(seen))
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send(
            "POST /private/batch HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 16000000\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 401)
        #expect(response.errorCode == "Unauthorized")
        #expect(response.header("Connection") == "close")
        #expect(try client.readsEndOfStream())
        #expect(seen.handled == 0)
        #expect(seen.heads.withLock { $0 } == ["POST /private/batch 0"])
        // Nothing of the refused body was reserved.
        #expect(server.reservedBodyBytes == 0)

        let other = try RawHTTPClient(address)
        try other.send("POST /open HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi")
        #expect(try other.readResponse().status == 200)
        #expect(seen.handled == 1)
    }

    @Test func refusedHeadWhoseBodyIsAlreadySentIsAnsweredAndTheBodyDropped() throws {
        let seen = Seen()
        let (server, address) = try startServer(Self.guarded(seen))
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        // A pipelined request behind the body must not be served on a connection whose body was never read.
        try client.send("POST /private HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
            + "GET /open HTTP/1.1\r\nHost: h\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 401)
        #expect(response.header("Connection") == "close")
        #expect(try client.readsEndOfStream())
        #expect(seen.handled == 0)
    }

    @Test func refusedHEADGetsNoBody() throws {
        let (server, address) = try startServer(Self.guarded(Seen()))
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("HEAD /private HTTP/1.1\r\nHost: h\r\n\r\n")
        let response = try client.readResponse(head: true)
        #expect(response.status == 401)
        #expect(try client.readsEndOfStream())
    }

    // MARK: - Host

    @Test func http11RequestWithoutHostIs400AndNeverReachesTheHandler() throws {
        let seen = Seen()
        let (server, address) = try startServer(Self.guarded(seen))
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("GET /open HTTP/1.1\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(response.errorCode == "BadRequest")
        #expect(response.body.contains("Host"))
        #expect(response.header("Connection") == "close")
        #expect(try client.readsEndOfStream())
        #expect(seen.handled == 0)
    }

    // MARK: - Body budget

    @Test func bodyBeyondTheBudgetIsRefusedFromItsHeadUntilTheHandlerAnswers() throws {
        let parked = Mutex<[any HTTPResponder]>([])
        let arrived = Latch()
        let handler = TestHandler { request, responder in
            guard request.target == "/park" else {
                return responder.respond(.text(200, "\(request.target) \(request.body.count)"))
            }
            parked.withLock { $0.append(responder) }
            arrived.open()
        }
        let (server, address) = try startServer(handler) { $0.maxBodyBytesInFlight = 1000 }
        defer { server.shutdown(gracePeriod: 1) }

        // The first body reserves its whole Content-Length as soon as its head is in, before its body is.
        let first = try RawHTTPClient(address)
        try first.send("POST /park HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 600\r\n\r\n")
        #expect(try first.readResponse().status == 100)
        #expect(server.reservedBodyBytes == 600)

        let second = try RawHTTPClient(address)
        try second.send("POST /m HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 600\r\n\r\n")
        let refused = try second.readResponse()
        #expect(refused.status == 503)
        #expect(refused.errorCode == "Unavailable")
        #expect(refused.header("Retry-After") != nil)
        #expect(refused.header("Connection") == "close")
        #expect(try second.readsEndOfStream())

        // What fits beside it is read as usual.
        let small = try RawHTTPClient(address)
        try small.send(
            "POST /small HTTP/1.1\r\nHost: h\r\nContent-Length: 400\r\n\r\n" + String(repeating: "s", count: 400))
        #expect(try small.readResponse().body == "/small 400")

        // While the handler holds the first body, the budget still counts it.
        try first.send(String(repeating: "f", count: 600))
        #expect(arrived.wait())
        let third = try RawHTTPClient(address)
        try third.send("POST /m HTTP/1.1\r\nHost: h\r\nContent-Length: 600\r\n\r\n")
        #expect(try third.readResponse().status == 503)

        // Its answer gives the room back.
        parked.withLock { $0.forEach { $0.respond(.text(200, "parked")) } }
        #expect(try first.readResponse().body == "parked")
        #expect(server.reservedBodyBytes == 0)
        let fourth = try RawHTTPClient(address)
        try fourth.send("POST /m HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 600\r\n\r\n")
        #expect(try fourth.readResponse().status == 100)
        try fourth.send(String(repeating: "4", count: 600))
        #expect(try fourth.readResponse().body == "/m 600")
    }

    @Test func aClientThatLeavesMidBodyGivesItsReservationBack() throws {
        let (server, address) = try startServer { $0.maxBodyBytesInFlight = 1000 }
        defer { server.shutdown(gracePeriod: 1) }
        let gone = try RawHTTPClient(address)
        try gone.send("POST /m HTTP/1.1\r\nHost: h\r\nContent-Length: 900\r\n\r\n" + String(repeating: "g", count: 100))
        var reserved = false
        for _ in 0..<500 where !reserved {
            reserved = server.reservedBodyBytes == 900
            if !reserved { usleep(10_000) }
        }
        #expect(reserved)
        gone.reset()
        // The server notices the reset asynchronously.
        var released = false
        for _ in 0..<500 where !released {
            released = server.reservedBodyBytes == 0
            if !released { usleep(10_000) }
        }
        #expect(released)
        let next = try RawHTTPClient(address)
        try next.send("POST /m HTTP/1.1\r\nHost: h\r\nContent-Length: 900\r\n\r\n" + String(repeating: "n", count: 900))
        #expect(try next.readResponse().status == 200)
    }

    @Test func aBodyThatTimesOutGivesItsReservationBack() throws {
        let (server, address) = try startServer {
            $0.maxBodyBytesInFlight = 1000
            $0.bodyTimeout = 0.3
        }
        defer { server.shutdown(gracePeriod: 1) }
        let slow = try RawHTTPClient(address)
        try slow.send("POST /m HTTP/1.1\r\nHost: h\r\nContent-Length: 900\r\n\r\nabc")
        #expect(try slow.readResponse().status == 408)
        #expect(server.reservedBodyBytes == 0)
    }
}
