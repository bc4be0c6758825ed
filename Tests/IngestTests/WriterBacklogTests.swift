import Foundation
import HTTP
import Queue
import Storage
import Testing
import TestSupport

@testable import Ingest

/// When the writer falls behind, ingest says so at once instead of queueing without bound.
@Suite struct WriterBacklogTests {
    private let directory = TemporaryDirectory(prefix: "herald-backlog")

    @Test func aBehindWriterGets503WithRetryAfterAndNothingIsStored() throws {
        let path = directory.path("herald.db")
        let writer = try DatabaseWriter(path: path)
        let readers = try DatabaseReaders(path: path)
        let api = IngestAPI(writer: writer, readers: readers, apiToken: nil, maxWriterBacklog: 2)

        // Hold the writer thread, then fill its queue up to the limit.
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        writer.enqueue({ _ in holding.signal(); release.wait() }, completion: { _ in })
        holding.wait()
        writer.enqueue({ _ in }, completion: { _ in })
        writer.enqueue({ _ in }, completion: { _ in })
        #expect(writer.backlog == 2)

        let responder = Capture()
        api.handle(HTTPRequest(method: "POST", target: "/v1/messages", body: Array(#"{"to":"a"}"#.utf8)),
                   responder: responder)
        let refused = try #require(responder.response)
        #expect(refused.status == 503)
        #expect(refused.headers.contains { $0.name == "Retry-After" })
        #expect(String(decoding: refused.body, as: UTF8.self).contains("Unavailable"))

        release.signal()
        let stored = try writer.write { try $0.connection.queryOne("SELECT count(*) FROM messages") { $0.int(0) } }
        #expect(stored == 0)
        readers.close()
        writer.close()
    }
}

/// Records a response given on the calling thread.
private final class Capture: HTTPResponder, @unchecked Sendable {
    private let lock = NSLock()
    private var value: HTTPResponse?
    var response: HTTPResponse? { lock.withLock { value } }
    func respond(_ response: HTTPResponse) { lock.withLock { value = response } }
}
