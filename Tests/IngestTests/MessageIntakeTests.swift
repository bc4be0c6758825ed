import Foundation
import HTTP
import Queue
import Storage
import Support
import Testing

@testable import Ingest
import TestSupport

/// Every ingest route stores through `MessageIntake`: a committed message is counted once in
/// `herald_ingested_messages_total{app}` and wakes the claimer only when it has deliveries; a repeated
/// `Idempotency-Key` stored nothing, so it neither counts nor wakes.
@Suite struct MessageIntakeTests {
    private let directory = TemporaryDirectory(prefix: "herald-intake")
    private let writer: DatabaseWriter
    private let readers: DatabaseReaders
    private let metrics = Metrics.herald()
    private let woken = Counter()
    private let api: IngestAPI

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
        readers = try DatabaseReaders(path: directory.path("herald.db"))
        api = IngestAPI(writer: writer, readers: readers, apiToken: nil, metrics: metrics,
                        committed: { [woken] in woken.increment() })
    }

    @discardableResult
    private func post(_ target: String, _ body: String, headers: [(String, String)] = []) -> Int {
        let responder = WaitingResponder()
        api.handle(
            HTTPRequest(method: "POST", target: target, headers: [("content-type", "application/json")] + headers,
                        body: Array(body.utf8)),
            responder: responder)
        return responder.wait().status
    }

    private var ingested: Int {
        let prefix = #"herald_ingested_messages_total{app="default"} "#
        let line = metrics.render().split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }

    @Test func aMessageIsCountedAndWakesTheClaimerOnceAndItsRepeatNeither() {
        let key = [("idempotency-key", "order-1")]
        #expect(post("/v1/messages", #"{"to": "a"}"#, headers: key) == 202)
        #expect((ingested, woken.count) == (1, 1))
        #expect(post("/v1/messages", #"{"to": "a"}"#, headers: key) == 202)
        #expect((ingested, woken.count) == (1, 1))

        let v1 = #"{"message": {"token": "b", "data": {"k": "v"}}}"#
        #expect(post("/v1/projects/p/messages:send", v1, headers: [("idempotency-key", "order-2")]) == 200)
        #expect(post("/v1/projects/p/messages:send", v1, headers: [("idempotency-key", "order-2")]) == 200)
        #expect((ingested, woken.count) == (2, 2))

        #expect(post("/fcm/send", #"{"to": "c"}"#) == 200)
        #expect((ingested, woken.count) == (3, 3))
    }

    @Test func aMessageWithoutDeliveriesIsCountedButWakesNoOne() {
        #expect(post("/v1/messages", #"{"app": "default", "users": ["nobody"]}"#) == 202)
        #expect((ingested, woken.count) == (1, 0))
    }

    /// A message to users that names no app goes to every app (SPEC §17): it counts under `app="*"`.
    @Test func aMessageToUsersInEveryAppCountsUnderStar() {
        #expect(post("/v1/messages", #"{"users": ["nobody"]}"#) == 202)
        #expect(metrics.render().contains(#"herald_ingested_messages_total{app="*"} 1"#))
        #expect(ingested == 0)
    }

    @Test func aBatchCountsEachStoredMessageAndWakesOnce() {
        let batch = #"{"messages": [{"to": "a"}, {"to": 7}, {"to": "b"}, {"app": "default", "users": ["x"]}]}"#
        #expect(post("/v1/messages/batch", batch) == 200)
        #expect((ingested, woken.count) == (3, 1))
    }
}
