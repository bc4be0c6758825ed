import Foundation
import Glibc

/// A blocking client on a raw TCP socket to the real `herald`, for what URLSession will not send as asked:
/// a head without its body, no `Host`, an encoded `/` left alone. Reads give up after ten seconds.
final class RawHTTPClient {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: CInt
    private var buffer: [UInt8] = []

    /// Connects to `url`'s loopback port.
    init(_ url: URL) throws {
        guard let port = url.port else { throw Failure(description: "no port in \(url)") }
        fd = socket(AF_INET, CInt(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "connect failed: errno \(errno)")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, CInt(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw Failure(description: "send failed: errno \(errno)") }
            offset += written
        }
    }

    /// The next response (an interim `100 Continue` included), framed by its `Content-Length`.
    func readResponse() throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            end = buffer.indices.dropLast(3).first { Array(buffer[$0..<$0 + 4]) == separator }
            if end == nil { guard try fill() else { throw Failure(description: "closed before a response") } }
        }
        let head = String(decoding: buffer[0..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line in \(head)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
        let length = headers["content-length"].flatMap(Int.init) ?? 0
        while buffer.count < length {
            guard try fill() else { throw Failure(description: "closed inside a body") }
        }
        let body = String(decoding: buffer[0..<length], as: UTF8.self)
        buffer.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// True when the server has closed the connection with nothing more to read.
    func readsEndOfStream() throws -> Bool {
        buffer.isEmpty ? try !fill() : false
    }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw Failure(description: "recv failed or timed out: errno \(errno)")
        }
        buffer.append(contentsOf: chunk[0..<max(count, 0)])
        return count > 0
    }
}
