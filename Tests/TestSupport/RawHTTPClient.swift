import Foundation
import Glibc
import HTTP

/// A blocking HTTP/1.1 client on a raw socket, so a test controls exactly which bytes go out and when: a head without
/// its body, no `Host`, an encoded `/` left alone, a reset instead of a close. Reads give up after ten seconds so a
/// broken server fails a test instead of hanging it.
public final class RawHTTPClient {
    public struct Response {
        public var status: Int
        /// By lowercased name.
        public var headers: [String: String]
        public var body: String

        /// A header's value, its name in any case.
        public func header(_ name: String) -> String? { headers[name.lowercased()] }

        public var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }

        /// The `code` of an `{"error":{"code","message"}}` body.
        public var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private let fd: CInt
    private var isOpen = true
    private var buffer: [UInt8] = []

    /// Connects to `address` (a loopback port or a Unix socket); throws `POSIXError` (e.g. `ECONNREFUSED`) when the
    /// connect fails.
    public init(_ address: ListenAddress) throws {
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
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Connects to `url`'s loopback port.
    public convenience init(_ url: URL) throws {
        guard let port = url.port else { throw Failure(description: "no port in \(url)") }
        try self.init(.tcp(host: "127.0.0.1", port: port))
    }

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
    public func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
        isOpen = false
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, CInt(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw Failure(description: "send failed: errno \(errno)") }
            offset += written
        }
    }

    /// Shuts the writing side, as a client that has sent everything does.
    public func finishSending() { shutdown(fd, CInt(SHUT_WR)) }

    /// Reads exactly `count` bytes.
    public func read(count: Int) throws -> String {
        while buffer.count < count {
            guard try fill() else { throw Failure(description: "connection closed after \(buffer.count) bytes") }
        }
        defer { buffer.removeFirst(count) }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// The next response (an interim `100 Continue` included), its body framed by `Content-Length`; none for the
    /// answer to a `HEAD` (`head`).
    public func readResponse(head: Bool = false) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            end = buffer.indices.dropLast(3).first { buffer[$0..<$0 + 4].elementsEqual(separator) }
            if end == nil { guard try fill() else { throw Failure(description: "closed before a response") } }
        }
        let headText = String(decoding: buffer[0..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line in \(headText)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
        var response = Response(status: status, headers: headers, body: "")
        if let length = response.header("Content-Length").flatMap(Int.init), !head, status != 100 {
            response.body = try read(count: length)
        }
        return response
    }

    /// True when the server has closed the connection with nothing more to read.
    public func readsEndOfStream() throws -> Bool {
        buffer.isEmpty ? try !fill() : false
    }

    /// Reads more bytes; false at end of stream (or a reset).
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw Failure(description: "recv failed or timed out: errno \(errno)")
        }
        buffer.append(contentsOf: chunk[0..<count])
        return count > 0
    }
}
