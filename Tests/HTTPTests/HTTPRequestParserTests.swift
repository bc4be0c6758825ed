import Foundation
@testable import HTTP
import Testing

/// What the parser produced, in a form tests can compare.
private enum Outcome: Equatable {
    case needMoreData
    case continueExpected
    case request(method: String, target: String, body: String, keepAlive: Bool)
    /// `admit` answered; its status and its error code, if it has one.
    case refused(status: Int, code: String?)
    case failure(status: Int, code: String)
}

private func outcome(_ event: HTTPRequestParser.Event) -> Outcome {
    switch event {
    case .needMoreData: .needMoreData
    case .continueExpected: .continueExpected
    case .request(let parsed):
        .request(
            method: parsed.request.method, target: parsed.request.target,
            body: String(decoding: parsed.request.body, as: UTF8.self), keepAlive: parsed.keepAlive)
    case .refused(let response): .refused(status: response.status, code: errorCode(in: response))
    case .failure(let error): .failure(status: error.status, code: error.code)
    }
}

private func errorCode(in response: HTTPResponse) -> String? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
          let error = object["error"] as? [String: Any]
    else { return nil }
    return error["code"] as? String
}

/// Admits what the server's body limit would: 413 for a declared body over `limit`.
private func admitting(upTo limit: Int) -> (HTTPRequest, Int) -> HTTPResponse? {
    { _, length in length > limit ? HTTPRequestError.bodyTooLarge(limit: limit).response : nil }
}

private extension HTTPRequestParser {
    mutating func feed(_ text: String) { append(Array(text.utf8)) }

    mutating func nextOutcome(limit: Int = 1 << 20) -> Outcome {
        outcome(next(admit: admitting(upTo: limit)))
    }

    /// The first outcome of parsing `text` in one piece.
    static func first(_ text: String, limit: Int = 1 << 20, maxHeaderBytes: Int = 16 * 1024) -> Outcome {
        var parser = HTTPRequestParser(maxHeaderBytes: maxHeaderBytes)
        parser.feed(text)
        return parser.nextOutcome(limit: limit)
    }
}

@Suite struct HTTPRequestParserTests {
    @Test func requestSplitByteByByteCompletesOnlyWithItsLastByte() {
        let text = "POST /v1/messages?x=1 HTTP/1.1\r\nHost: herald\r\nContent-Length: 5\r\n"
            + "X-Trace-ID:  abc def \t\r\n\r\nhello"
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        var events: [HTTPRequestParser.Event] = []
        for byte in text.utf8 {
            parser.append([byte])
            let event = parser.next(admit: admitting(upTo: 100))
            if case .needMoreData = event { continue }
            events.append(event)
        }
        #expect(events.count == 1)
        guard case .request(let parsed)? = events.first else {
            Issue.record("expected one request, got \(events.map(outcome))")
            return
        }
        #expect(parsed.request.method == "POST")
        #expect(parsed.request.target == "/v1/messages?x=1")
        #expect(parsed.request.headers.map(\.name) == ["host", "content-length", "x-trace-id"])
        #expect(parsed.request.header("x-trace-id") == "abc def")
        #expect(parsed.request.body == Array("hello".utf8))
        #expect(parsed.keepAlive)
        #expect(parser.phase == .idle)
    }

    @Test func twoPipelinedRequestsInOneReadComeOutInOrder() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\none"
            + "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\ntwo")
        #expect(parser.nextOutcome() == .request(method: "POST", target: "/a", body: "one", keepAlive: true))
        #expect(parser.nextOutcome() == .request(method: "POST", target: "/b", body: "two", keepAlive: true))
        #expect(parser.nextOutcome() == .needMoreData)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func secondRequestWaitsWhilePartial() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HT")
        #expect(parser.nextOutcome() == .request(method: "GET", target: "/a", body: "", keepAlive: true))
        #expect(parser.nextOutcome() == .needMoreData)
        #expect(parser.phase == .head)
        parser.feed("TP/1.1\r\nHost: h\r\n\r\n")
        #expect(parser.nextOutcome() == .request(method: "GET", target: "/b", body: "", keepAlive: true))
    }

    @Test(arguments: [
        // A complete head over the limit.
        "GET / HTTP/1.1\r\nHost: h\r\nX-Big: \(String(repeating: "a", count: 100))\r\n\r\n",
        // A head that never ends and is already over the limit.
        "GET / HTTP/1.1\r\nHost: h\r\nX-Big: \(String(repeating: "a", count: 100))",
    ])
    func oversizedHeadIs431(text: String) {
        #expect(HTTPRequestParser.first(text, maxHeaderBytes: 64)
            == .failure(status: 431, code: "RequestHeaderFieldsTooLarge"))
    }

    @Test func headExactlyAtTheLimitIsAccepted() {
        let head = "GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "a", count: 10))\r\n\r\n"
        #expect(HTTPRequestParser.first(head, maxHeaderBytes: head.utf8.count)
            == .request(method: "GET", target: "/", body: "", keepAlive: true))
    }

    @Test func admitSeesTheHeadOnceBeforeAnyBodyArrivesAndItsAnswerStands() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("POST /v1/messages?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhel")
        var asked: [String] = []
        let event = parser.next(admit: { head, length in
            asked.append("\(head.method) \(head.path) \(head.header("host") ?? "-") \(head.body.count) \(length)")
            return HTTPResponse(status: 401)
        })
        #expect(outcome(event) == .refused(status: 401, code: nil))
        #expect(asked == ["POST /v1/messages h 0 11"])
        // Refused for good, and what came of the body is not kept.
        #expect(parser.bufferedByteCount == 0)
        parser.feed("lo world")
        #expect(parser.nextOutcome() == .refused(status: 401, code: nil))
        #expect(asked.count == 1)
    }

    @Test func admitIsAskedForRequestsWithoutABodyToo() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(outcome(parser.next(admit: { _, length in HTTPResponse(status: length == 0 ? 403 : 500) }))
            == .refused(status: 403, code: nil))
    }

    @Test func bodyOverTheLimitIs413BeforeAnyBodyArrives() {
        let head = "POST /v1/messages HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n"
        #expect(HTTPRequestParser.first(head, limit: 10) == .refused(status: 413, code: "PayloadTooLarge"))
    }

    @Test func bodyAtTheLimitIsAccepted() {
        #expect(HTTPRequestParser.first("PUT /t HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nabcd", limit: 4)
            == .request(method: "PUT", target: "/t", body: "abcd", keepAlive: true))
    }

    @Test(arguments: [
        "GET\r\n\r\n",
        "GET /\r\n\r\n",
        "GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
        "G@T / HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET / HTTP/1.1 extra\r\n\r\n",
        "GET / http/1.1\r\n\r\n",
        "GET / HTTP/11\r\n\r\n",
        "GET /a\u{7F}b HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET /caf\u{E9} HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\n: empty name\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{01}b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n",
    ])
    func malformedHeadIs400(text: String) {
        #expect(HTTPRequestParser.first(text) == .failure(status: 400, code: "BadRequest"))
    }

    @Test func invalidUTF8InAHeaderValueIs400() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.append(Array("GET / HTTP/1.1\r\nHost: h\r\nX-Name: ".utf8) + [0xC3, 0x28] + Array("\r\n\r\n".utf8))
        #expect(parser.nextOutcome() == .failure(status: 400, code: "BadRequest"))
    }

    @Test func validUTF8InAHeaderValueIsKept() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("GET / HTTP/1.1\r\nHost: h\r\nX-Name: Zoë\r\n\r\n")
        guard case .request(let parsed) = parser.next(admit: { _, _ in nil }) else {
            Issue.record("expected a request")
            return
        }
        #expect(parsed.request.header("x-name") == "Zoë")
    }

    @Test(arguments: ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"])
    func unsupportedVersionIs505(version: String) {
        #expect(HTTPRequestParser.first("GET / \(version)\r\n\r\n")
            == .failure(status: 505, code: "HTTPVersionNotSupported"))
    }

    @Test func expectContinueAsksForTheBodyThenDeliversIt() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("POST /m HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n")
        #expect(parser.nextOutcome() == .continueExpected)
        #expect(parser.nextOutcome() == .needMoreData)
        #expect(parser.phase == .body)
        parser.feed("hello")
        #expect(parser.nextOutcome() == .request(method: "POST", target: "/m", body: "hello", keepAlive: true))
    }

    @Test func expectContinueOverTheLimitIs413WithoutContinue() {
        #expect(HTTPRequestParser.first(
            "POST /m HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n", limit: 4096)
            == .refused(status: 413, code: "PayloadTooLarge"))
    }

    @Test func expectContinueIsIgnoredForHTTP10() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("POST /m HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        #expect(parser.nextOutcome() == .needMoreData)
    }

    @Test(arguments: [
        ("HTTP/1.1", nil, true),
        ("HTTP/1.1", "close", false),
        ("HTTP/1.1", "Keep-Alive, CLOSE", false),
        ("HTTP/1.1", "keep-alive", true),
        ("HTTP/1.0", nil, false),
        ("HTTP/1.0", "Keep-Alive", true),
        ("HTTP/1.0", "close", false),
    ] as [(String, String?, Bool)])
    func keepAliveFollowsVersionAndConnectionHeader(version: String, connection: String?, keepAlive: Bool) {
        let header = connection.map { "Connection: \($0)\r\n" } ?? ""
        #expect(HTTPRequestParser.first("GET / \(version)\r\nHost: h\r\n\(header)\r\n")
            == .request(method: "GET", target: "/", body: "", keepAlive: keepAlive))
    }

    @Test(arguments: ["chunked", "gzip, chunked", "identity"])
    func transferEncodingIs411(coding: String) {
        #expect(HTTPRequestParser.first("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \(coding)\r\n\r\n")
            == .failure(status: 411, code: "LengthRequired"))
    }

    @Test(arguments: [
        "Content-Length: 5\r\nContent-Length: 6",
        "Content-Length: 5, 6",
        "Content-Length: abc",
        "Content-Length: -1",
        "Content-Length: +5",
        "Content-Length: 5 5",
        "Content-Length: ",
    ])
    func invalidOrConflictingContentLengthIs400(headers: String) {
        #expect(HTTPRequestParser.first("POST / HTTP/1.1\r\nHost: h\r\n\(headers)\r\n\r\nhello")
            == .failure(status: 400, code: "BadRequest"))
    }

    @Test(arguments: ["Content-Length: 5\r\nContent-Length: 5", "Content-Length: 5, 5", "Content-Length: 005"])
    func repeatedEqualContentLengthIsAccepted(headers: String) {
        #expect(HTTPRequestParser.first("POST / HTTP/1.1\r\nHost: h\r\n\(headers)\r\n\r\nhello")
            == .request(method: "POST", target: "/", body: "hello", keepAlive: true))
    }

    @Test func hugeContentLengthIs413NotACrash() {
        #expect(HTTPRequestParser.first("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n")
            == .refused(status: 413, code: "PayloadTooLarge"))
    }

    @Test(arguments: ["POST", "PUT"])
    func postWithoutContentLengthHasAnEmptyBody(method: String) {
        #expect(HTTPRequestParser.first("\(method) /x HTTP/1.1\r\nHost: h\r\n\r\n")
            == .request(method: method, target: "/x", body: "", keepAlive: true))
    }

    @Test func emptyLinesBeforeARequestAndBareLineFeedsAreAccepted() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("\r\n\nGET /a HTTP/1.1\nHost: h\n\n")
        #expect(parser.nextOutcome() == .request(method: "GET", target: "/a", body: "", keepAlive: true))
    }

    @Test func leadingEmptyLineSplitAcrossReadsIsSkipped() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("\r")
        #expect(parser.nextOutcome() == .needMoreData)
        parser.feed("\nGET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(parser.nextOutcome() == .request(method: "GET", target: "/a", body: "", keepAlive: true))
    }

    @Test func aFailedParserStaysFailed() {
        var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
        parser.feed("BAD\r\n\r\n")
        #expect(parser.nextOutcome() == .failure(status: 400, code: "BadRequest"))
        parser.feed("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(parser.nextOutcome() == .failure(status: 400, code: "BadRequest"))
    }

    // MARK: - Host

    @Test(arguments: [
        "GET / HTTP/1.1\r\n\r\n",
        "POST /v1/messages HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n",
    ])
    func missingRepeatedOrMalformedHostIs400(text: String) {
        #expect(HTTPRequestParser.first(text) == .failure(status: 400, code: "BadRequest"))
    }

    @Test(arguments: [
        "GET / HTTP/1.1\r\nHost: herald.example:8600\r\n\r\n",
        "GET / HTTP/1.1\r\nhost: [::1]:8600\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        // RFC 9110 §7.2: empty when the target has no authority.
        "GET / HTTP/1.1\r\nHost:\r\n\r\n",
        // HTTP/1.0 predates Host; health checkers still send it without one.
        "GET / HTTP/1.0\r\n\r\n",
    ])
    func oneWellFormedHostOrAnHTTP10RequestWithoutOneIsAccepted(text: String) {
        guard case .request = HTTPRequestParser.first(text) else {
            Issue.record("expected a request from \(text.debugDescription)")
            return
        }
    }

    // MARK: - Path

    @Test func percentEncodedSlashStaysInsideItsSegment() {
        let request = HTTPRequest(method: "GET", target: "/v1/tokens/abc%2Fdef%20g?x=%2F")
        #expect(request.path == "/v1/tokens/abc%2Fdef%20g")
        #expect(request.pathSegments == ["v1", "tokens", "abc/def g"])
        #expect(request.query == ["x": "/"])
        #expect(HTTPRequest(method: "GET", target: "/").pathSegments == [""])
        #expect(HTTPRequest(method: "GET", target: "/a//b/").pathSegments == ["a", "", "b", ""])
        #expect(HTTPRequest.pathSegments(of: "/v1/messages/%62atch") == ["v1", "messages", "batch"])
    }

    @Test(arguments: ["/v1/tokens/%", "/v1/tokens/%zz", "/v1/tokens/a%2", "/v1/tokens/%C3%28"])
    func malformedPercentEncodingInThePathIs400(path: String) {
        #expect(HTTPRequest.pathSegments(of: path) == nil)
        #expect(HTTPRequestParser.first("GET \(path) HTTP/1.1\r\nHost: h\r\n\r\n")
            == .failure(status: 400, code: "BadRequest"))
    }
}
