import Foundation
import HTTP
import Queue
import Storage
import Testing
import TestSupport

@testable import Ingest

/// A database that cannot grow: every message is either answered 202 and stored, or 503 with `Retry-After` and not
/// stored. Never a false 202, never stored-but-refused, even when SQLite rolls back the whole group commit.
@Suite struct DiskFullTests {
    private let directory = TemporaryDirectory(prefix: "herald-full")

    /// `POST /v1/messages` answers 202, FCM's `/fcm/send` answers 200 with its results.
    @Test(arguments: [("/v1/messages", 202), ("/fcm/send", 200)])
    func eachMessageOfAGroupThatHitsAFullDiskIsEitherStoredAndAcceptedOrRefusedAndAbsent(
        _ target: String, _ acceptedStatus: Int
    ) throws {
        let path = directory.path("herald.db")
        let writer = try DatabaseWriter(path: path)
        let readers = try DatabaseReaders(path: path)
        let api = IngestAPI(writer: writer, readers: readers, apiToken: nil)
        _ = try writer.write { store in
            try store.ensureApp("default")
            let pages = try store.connection.queryOne("PRAGMA page_count") { $0.int(0) } ?? 0
            try store.connection.execute("PRAGMA max_page_count = \(pages + 2)")
        }

        // Hold the writer so the three messages are committed as one group; the middle one cannot fit.
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        writer.enqueue({ _ in holding.signal(); release.wait() }, completion: { _ in })
        holding.wait()
        let tokens = (0..<1000).map { "\"token-\($0)-\(String(repeating: "x", count: 150))\"" }.joined(separator: ",")
        let bodies = [
            #"{"to": "small-before"}"#, #"{"registration_ids": [\#(tokens)]}"#, #"{"to": "small-after"}"#,
        ]
        let responders = bodies.map { _ in Capture() }
        for (body, responder) in zip(bodies, responders) {
            let request = HTTPRequest(
                method: "POST", target: target, headers: [("content-type", "application/json")], body: Array(body.utf8))
            api.handle(request, responder: responder)
        }
        release.signal()
        let responses = responders.map { $0.wait() }
        let stored = try writer.write { store in
            try store.connection.query("SELECT token FROM deliveries") { $0.string(0) }
        }
        readers.close()
        writer.close()

        #expect(responses[1].status == 503, "the message that does not fit")
        for (token, response) in zip(["small-before", "", "small-after"], responses) {
            let body = String(decoding: response.body, as: UTF8.self)
            switch response.status {
            case acceptedStatus:
                #expect(stored.contains(token), "\(token) was acknowledged but is not stored: \(body)")
            case 503:
                #expect(response.headers.contains { $0.name == "Retry-After" })
                #expect(!stored.contains(token), "\(token) was refused but is stored")
            default:
                Issue.record("unexpected answer \(response.status): \(body)")
            }
        }
        #expect(stored.allSatisfy { $0.hasPrefix("small-") }, "nothing of the message that did not fit is stored")
    }
}

/// Records a response given on any thread and lets the test wait for it.
private final class Capture: HTTPResponder, @unchecked Sendable {
    private let lock = NSLock()
    private let given = DispatchSemaphore(value: 0)
    private var value: HTTPResponse?

    func respond(_ response: HTTPResponse) {
        lock.withLock { value = response }
        given.signal()
    }

    func wait() -> HTTPResponse {
        given.wait()
        return lock.withLock { value! }
    }
}
