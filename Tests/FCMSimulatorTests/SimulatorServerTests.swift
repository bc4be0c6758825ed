import FCMSimulator
import Foundation
import HTTP
import Support
import Testing
import TestSupport

/// The simulator behind the real `HTTPServer` on an ephemeral 127.0.0.1 port, driven over a socket.
@Suite struct SimulatorServerTests {
    @Test func officialExampleAndStatsOverTheWire() throws {
        let simulator = FCMSimulator.everySide(.init(aliases: TokenOutcomeTests.officialAliases), serverKey: "k")
        let (server, port) = try start(simulator)
        defer { server.shutdown(gracePeriod: 1) }

        let send = try exchange(port, post("/fcm/send", #"{"registration_ids":["4","8","15","16","23","42"]}"#, [
            "Authorization: key=k", "Content-Type: application/json",
        ]))
        #expect(send.status == 200)
        let results = try #require(try JSON.parse(Array(send.body.utf8))["results"]?.arrayValue)
        #expect(results.map(meaning(of:)) == [
            .delivered, .error("Unavailable"), .error("InvalidRegistration"), .delivered, .canonical("32"),
            .error("NotRegistered"),
        ])

        let stats = try exchange(port, "GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(stats.status == 200)
        let recorded = try #require(try JSON.parse(Array(stats.body.utf8))["requests"]?.arrayValue)
        #expect(recorded.map { $0["tokens"] } == [["4", "8", "15", "16", "23", "42"]])
    }

    @Test func faultsAndPlainTextOverTheWire() throws {
        let simulator = FCMSimulator.everySide()
        let (server, port) = try start(simulator)
        defer { server.shutdown(gracePeriod: 1) }

        let control = #"{"fail_next":1,"retry_after":"2","retry_after_date":true}"#
        let controlled = try exchange(port, post("/control", control))
        #expect(controlled.status == 200)

        let plain = "registration_id=unavail-1-a&time_to_live=30"
        let request = post("/fcm/send", plain, [
            "Authorization: key=x", "Content-Type: application/x-www-form-urlencoded;charset=UTF-8",
        ])
        let before = Date()
        let failed = try exchange(port, request)
        #expect(failed.status == 503)
        let retryAfter = try #require(failed.headers["retry-after"])
        #expect(try #require(FaultTests.httpDate.date(from: retryAfter)) >= before)
        let unavailable = try exchange(port, request)
        #expect(unavailable.status == 500)
        let delivered = try exchange(port, request)
        #expect(delivered.status == 200)
        #expect(delivered.body.hasPrefix("id=0:"))
        #expect(simulator.stats().requests.map(\.status) == [503, 500, 200])
        #expect(simulator.stats().requests.map(\.timeToLive) == [30, 30, 30])
    }

    // MARK: - Over the wire

    private func start(_ simulator: FCMSimulator) throws -> (HTTPServer, Int) {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: simulator)
        guard case .tcp(_, let port) = try server.start() else { preconditionFailure("a TCP address gives a TCP port") }
        return (server, port)
    }

    /// A request that asks the server to close the connection after its reply.
    private func post(_ path: String, _ body: String, _ headers: [String] = []) -> String {
        (["POST \(path) HTTP/1.1", "Host: 127.0.0.1", "Content-Length: \(body.utf8.count)", "Connection: close"]
            + headers).joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    /// Sends `request` on a new connection and reads the reply.
    private func exchange(_ port: Int, _ request: String) throws -> RawHTTPClient.Response {
        let client = try RawHTTPClient(.tcp(host: "127.0.0.1", port: port))
        try client.send(request)
        return try client.readResponse()
    }
}
