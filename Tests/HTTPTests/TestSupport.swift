import Foundation
import Glibc
@testable import HTTP
import Synchronization

/// A handler made of closures, for tests.
struct TestHandler: HTTPHandler {
    var limit: Int = 1 << 20
    /// Answers a head from `admit`; nil admits.
    var onHead: @Sendable (HTTPRequest) -> HTTPResponse? = { _ in nil }
    let onRequest: @Sendable (HTTPRequest, any HTTPResponder) -> Void

    init(
        limit: Int = 1 << 20, onHead: @escaping @Sendable (HTTPRequest) -> HTTPResponse? = { _ in nil },
        _ onRequest: @escaping @Sendable (HTTPRequest, any HTTPResponder) -> Void
    ) {
        self.limit = limit
        self.onHead = onHead
        self.onRequest = onRequest
    }

    func admit(_ head: HTTPRequest) -> HTTPResponse? { onHead(head) }

    func bodyLimit(method: String, path: String) -> Int { limit }

    func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        onRequest(request, responder)
    }

    /// Answers 200 with the target, and the body after a newline when there is one.
    static let echo = TestHandler { request, responder in
        let body = request.body.isEmpty ? "" : "\n" + String(decoding: request.body, as: UTF8.self)
        responder.respond(.text(200, request.target + body))
    }
}

/// A server on an ephemeral loopback port (or a given Unix socket), shut down by the caller.
func startServer(
    _ handler: TestHandler = .echo, address: ListenAddress = .tcp(host: "127.0.0.1", port: 0),
    configure: (inout HTTPServerConfiguration) -> Void = { _ in }
) throws -> (HTTPServer, ListenAddress) {
    var configuration = HTTPServerConfiguration(address: address)
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, handler: handler)
    return (server, try server.start())
}

struct TestResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: String

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var errorCode: String? {
        guard let data = body.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let error = object["error"] as? [String: Any]
        else { return nil }
        return error["code"] as? String
    }
}

struct ClientError: Error, CustomStringConvertible {
    let description: String
}

/// A blocking test client on a raw socket, so tests control exactly which bytes go out and when.
/// Reads give up after a few seconds so that a broken server fails a test instead of hanging it.
final class TestClient {
    let fd: CInt
    private var buffer: [UInt8] = []

    init(_ address: ListenAddress) throws {
        switch address {
        case .tcp(_, let port):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            fd = try Self.connect(family: AF_INET, to: &address)
        case .unix(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            fd = try Self.connect(family: AF_UNIX, to: &address)
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    private var isOpen = true

    /// A connected blocking socket; throws `POSIXError` (e.g. `ECONNREFUSED`) when the connect fails.
    private static func connect<Address>(family: CInt, to address: inout Address) throws -> CInt {
        let fd = socket(family, CInt(SOCK_STREAM.rawValue), 0)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        return fd
    }

    deinit { if isOpen { Glibc.close(fd) } }

    /// Closes with a reset (`SO_LINGER` 0), so the server sees the connection fail rather than end.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
        isOpen = false
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, CInt(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw ClientError(description: "send failed: errno \(errno)") }
            offset += written
        }
    }

    /// Shuts the writing side, as a client that has sent everything does.
    func finishSending() { shutdown(fd, CInt(SHUT_WR)) }

    /// Reads more bytes; false at end of stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw ClientError(description: "recv failed or timed out: errno \(errno)")
        }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Reads exactly `count` bytes.
    func read(count: Int) throws -> String {
        while buffer.count < count {
            guard try fill() else { throw ClientError(description: "connection closed after \(buffer.count) bytes") }
        }
        defer { buffer.removeFirst(count) }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Reads one response framed by Content-Length.
    func readResponse(head: Bool = false) throws -> TestResponse {
        var end: Int?
        while true {
            if let found = findHeadEnd() { end = found; break }
            guard try fill() else { throw ClientError(description: "connection closed before a response") }
        }
        let headText = String(decoding: buffer[0..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]) else {
            throw ClientError(description: "bad status line in \(headText)")
        }
        let headers = lines.map { line -> (name: String, value: String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var response = TestResponse(status: status, headers: headers, body: "")
        if let length = response.header("Content-Length").flatMap(Int.init), !head, status != 100 {
            response.body = try read(count: length)
        }
        return response
    }

    /// True when the server closed the connection and sent nothing more.
    func readsEndOfStream() throws -> Bool {
        if !buffer.isEmpty { return false }
        return try !fill()
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }
}

/// A one-shot latch tests wait on, with a deadline so a broken server fails instead of hanging.
final class Latch: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func open() { semaphore.signal() }

    func wait(seconds: Double = 5) -> Bool {
        semaphore.wait(timeout: .now() + seconds) == .success
    }
}
