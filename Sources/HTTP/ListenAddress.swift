import Glibc

/// Where the server listens: a TCP host and port, or a Unix domain socket path.
///
/// ```swift
/// let address = try ListenAddress.parse("127.0.0.1:8600")   // .tcp(host: "127.0.0.1", port: 8600)
/// let local = try ListenAddress.parse("unix:/run/herald.sock")
/// ```
public enum ListenAddress: Sendable, Equatable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case unix(path: String)

    /// Why a `--listen` value was refused; `message` is written for the operator.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// The longest Unix socket path `sockaddr_un` holds, without the terminating NUL.
    public static let maxUnixPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Parses `host:port`, `[ipv6]:port` or `unix:/path`.
    public static func parse(_ text: String) throws(ParseError) -> ListenAddress {
        func fail(_ why: String) -> ParseError {
            ParseError(message: "invalid listen address \"\(text)\": \(why)")
        }
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            guard !path.isEmpty else { throw fail("the socket path is empty; write unix:/path/to/herald.sock") }
            guard path.utf8.count <= maxUnixPathBytes else {
                throw fail("the socket path is longer than \(maxUnixPathBytes) bytes")
            }
            guard !path.utf8.contains(0) else { throw fail("the socket path contains a NUL byte") }
            return .unix(path: path)
        }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw fail("missing \"]\" after the IPv6 address") }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw fail("expected \":port\" after \"]\"") }
            portText = rest.dropFirst()
            guard isIPv6Literal(String(host)) else { throw fail("\"\(host)\" is not an IPv6 address") }
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw fail("expected host:port, [ipv6]:port or unix:/path")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { throw fail("an IPv6 address needs brackets, e.g. [::1]:8600") }
        }
        guard !host.isEmpty else { throw fail("the host is empty; write 127.0.0.1:PORT to listen on loopback") }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let port = Int(portText), port <= 65535
        else { throw fail("the port must be a number from 0 to 65535") }
        return .tcp(host: String(host), port: port)
    }

    /// Whether only this machine can reach the address: 127.0.0.0/8, `::1`, `localhost`, and Unix sockets.
    public var isLoopback: Bool {
        switch self {
        case .unix:
            return true
        case .tcp(let host, _):
            if host.lowercased() == "localhost" { return true }
            var v4 = in_addr()
            if inet_pton(AF_INET, host, &v4) == 1 {
                return UInt32(bigEndian: v4.s_addr) >> 24 == 127
            }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, host, &v6) == 1 {
                return withUnsafeBytes(of: &v6) { bytes in
                    let loopback = bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1
                    // ::ffff:127.x.y.z is IPv4 loopback seen through an IPv6 socket.
                    let mapped = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
                    return loopback || (mapped && bytes[12] == 127)
                }
            }
            return false
        }
    }

    /// The address in the form `parse` reads.
    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }

    private static func isIPv6Literal(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1
    }
}
