import FCMSimulator
import Foundation
import Glibc
import HTTP
import Support
import Testing

/// The simulator behind the real `HTTPServer` on an ephemeral 127.0.0.1 port, driven over a socket.
@Suite struct SimulatorServerTests {
    @Test func officialExampleAndStatsOverTheWire() throws {
        let simulator = FCMSimulator(configuration: .init(serverKey: "k", aliases: TokenOutcomeTests.officialAliases))
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
        let simulator = FCMSimulator()
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

    // MARK: - A small client

    private func start(_ simulator: FCMSimulator) throws -> (HTTPServer, Int) {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: simulator)
        guard case .tcp(_, let port) = try server.start() else { throw SocketError(step: "listen") }
        return (server, port)
    }

    /// A request that asks the server to close the connection after its reply.
    private func post(_ path: String, _ body: String, _ headers: [String] = []) -> String {
        (["POST \(path) HTTP/1.1", "Host: 127.0.0.1", "Content-Length: \(body.utf8.count)", "Connection: close"]
            + headers).joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    struct SocketError: Error, CustomStringConvertible {
        var step: String
        var description: String { "\(step) failed: errno \(errno)" }
    }

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    /// Sends `request` on a new connection and reads until the server closes it (the requests say
    /// `Connection: close`); reads give up after 10 s so a broken server fails the test instead of hanging it.
    private func exchange(_ port: Int, _ request: String) throws -> Reply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(step: "socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw SocketError(step: "connect") }
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw SocketError(step: "send") }
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw SocketError(step: "recv") }
            received.append(contentsOf: buffer[..<count])
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw SocketError(step: "read a response head") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[line[..<colon].lowercased()] = value
        }
        return Reply(status: status, headers: headers, body: String(text[split.upperBound...]))
    }
}
