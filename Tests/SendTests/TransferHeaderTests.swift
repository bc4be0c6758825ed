@testable import Send
import Testing

@Suite struct TransferHeaderTests {
    private func headers(after lines: [String], keeping kept: [String]? = nil) throws -> [String] {
        Curl.initializeOnce()
        let transfer = try #require(Transfer())
        if let kept {
            let pool = UnsafeMutablePointer<Int>.allocate(capacity: 1)
            defer { pool.deallocate() }
            let origin = TransferOrigin(key: "http://127.0.0.1:1", maxConnections: 1, poolCounter: pool)
            let request = OutboundRequest(url: "http://127.0.0.1:1/", keptResponseHeaders: kept)
            #expect(transfer.prepare(
                request, timeoutMillis: 1_000, maxResponseBytes: 1_000, caFile: nil, counter: origin.counter,
                addressPolicy: nil))
        }
        for line in lines {
            #expect(Array(line.utf8).withUnsafeBytes { transfer.receiveHeaderLine($0) })
        }
        return transfer.responseHeaders.map { "\($0.name)=\($0.value)" }
    }

    @Test func onlyTheFinalResponsesHeadersAreKept() throws {
        let lines = [
            "HTTP/1.1 100 Continue\r\n", "X-Interim: yes\r\n", "\r\n",
            "HTTP/1.1 200 OK\r\n", "Content-Type: application/json\r\n", "Retry-After:  30 \r\n", "\r\n",
        ]
        #expect(try headers(after: lines) == ["content-type=application/json", "retry-after=30"])
    }

    @Test func foldedEmptyAndOddLinesParse() throws {
        let lines = [
            "HTTP/1.1 200 OK\r\n", "content-length: 2\r\n", "x-folded: a\r\n", "\t b\r\n", "no colon here\r\n",
            "X-Empty:\r\n", "\r\n",
        ]
        #expect(try headers(after: lines) == ["content-length=2", "x-folded=a b", "x-empty="])
    }

    /// A request that reads only some headers gets only those, whatever their case, and no continuation line of
    /// one it left out.
    @Test func onlyTheHeadersARequestKeepsAreKept() throws {
        let lines = [
            "HTTP/1.1 503 Service Unavailable\r\n", "Content-Type: application/json\r\n", "X-Folded: a\r\n",
            "\t b\r\n", "RETRY-after: 30\r\n", "Retry-After-Not: 1\r\n", "\r\n",
        ]
        #expect(try headers(after: lines, keeping: ["retry-after"]) == ["retry-after=30"])
        #expect(try headers(after: lines, keeping: []) == [])
        #expect(try headers(after: lines, keeping: ["x-folded", "content-type"]) == [
            "content-type=application/json", "x-folded=a b",
        ])
    }
}
