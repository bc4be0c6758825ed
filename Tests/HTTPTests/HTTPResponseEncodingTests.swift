@testable import HTTP
import Testing

@Suite struct HTTPResponseEncodingTests {
    private func encode(
        _ response: HTTPResponse, connection: ConnectionHeader = .none, omitBody: Bool = false
    ) -> String {
        var output: [UInt8] = []
        response.encode(into: &output, connection: connection, omitBody: omitBody)
        return String(decoding: output, as: UTF8.self)
    }

    @Test func responseHasStatusLineHeadersLengthAndBody() {
        #expect(encode(.json(202, "{}", headers: [("X-Id", "1")]))
            == "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nX-Id: 1\r\nContent-Length: 2\r\n\r\n{}")
    }

    @Test(arguments: [
        (ConnectionHeader.close, "Connection: close\r\n"),
        (.keepAlive, "Connection: keep-alive\r\n"),
        (.none, ""),
    ])
    func connectionHeaderIsWrittenWhenNeeded(connection: ConnectionHeader, line: String) {
        #expect(encode(HTTPResponse(status: 200), connection: connection)
            == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\(line)\r\n")
    }

    @Test func framingHeadersFromTheHandlerAreReplaced() {
        let response = HTTPResponse(
            status: 200,
            headers: [("content-length", "99"), ("Connection", "upgrade"), ("Transfer-Encoding", "chunked")],
            body: Array("ok".utf8))
        #expect(encode(response) == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    }

    @Test func lineBreaksInHeaderValuesCannotSplitTheResponse() {
        let response = HTTPResponse(status: 200, headers: [("X-A", "a\r\nSet-Cookie: evil")])
        #expect(encode(response) == "HTTP/1.1 200 OK\r\nX-A: a  Set-Cookie: evil\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func headResponseAnnouncesTheLengthWithoutTheBody() {
        #expect(encode(.text(200, "hello"), omitBody: true)
            == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n\r\n")
    }

    @Test func noContentHasNeitherLengthNorBody() {
        #expect(encode(HTTPResponse(status: 204, body: Array("x".utf8))) == "HTTP/1.1 204 No Content\r\n\r\n")
    }

    @Test func serverErrorsHaveTheJSONErrorBody() {
        let response = HTTPRequestError.tooManyConnections.response
        #expect(response.status == 503)
        #expect(response.headers.contains { $0.name == "Retry-After" })
        #expect(String(decoding: response.body, as: UTF8.self)
            == #"{"error":{"code":"Unavailable","message":"too many open connections; retry later"}}"#)
    }
}
