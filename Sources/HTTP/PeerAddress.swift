import Glibc

/// The address a request came from: what throttling counts per client and what a log line names. A plain value
/// (no text until one is asked for), read once per connection.
public enum PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// In host byte order. An IPv4 client of an IPv6 socket (`::ffff:a.b.c.d`) is this too.
    case ipv4(UInt32)
    /// The address's 16 bytes as two big-endian halves.
    case ipv6(high: UInt64, low: UInt64)
    /// A client of a Unix domain socket listener: a process on this machine.
    case unix

    /// The peer of a connected socket; nil when the kernel does not say.
    public init?(connectedSocket fd: CInt) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard status == 0 else { return nil }
        switch CInt(storage.ss_family) {
        case AF_INET:
            let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            self = .ipv4(UInt32(bigEndian: address.sin_addr.s_addr))
        case AF_INET6:
            let bytes = withUnsafeBytes(of: &storage) { raw in
                withUnsafeBytes(of: raw.load(as: sockaddr_in6.self).sin6_addr) { Array($0) }
            }
            self.init(ipv6: bytes)
        case AF_UNIX:
            self = .unix
        default:
            return nil
        }
    }

    /// An IPv6 address from its 16 bytes; an IPv4-mapped one (`::ffff:a.b.c.d`) is its IPv4 address.
    init(ipv6 bytes: [UInt8]) {
        func half(_ range: Range<Int>) -> UInt64 { bytes[range].reduce(0) { $0 << 8 | UInt64($1) } }
        let (high, low) = (half(0..<8), half(8..<16))
        self = high == 0 && low >> 32 == 0xFFFF ? .ipv4(UInt32(truncatingIfNeeded: low)) : .ipv6(high: high, low: low)
    }

    /// `203.0.113.7`, `2001:db8::1` (as `inet_ntop` writes it), `unix`.
    public var description: String {
        switch self {
        case .ipv4(let address):
            return (0..<4).map { String(address >> (24 - 8 * $0) & 0xFF) }.joined(separator: ".")
        case .ipv6(let high, let low):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { raw in
                for index in 0..<8 {
                    raw[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
                    raw[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
                }
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "ipv6" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        case .unix:
            return "unix"
        }
    }
}
