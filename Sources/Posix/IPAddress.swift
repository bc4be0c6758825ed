import Glibc

/// An IPv4 or IPv6 address, and the special-purpose range it falls in, if any: what `AddressPolicy` judges.
///
/// ```swift
/// IPAddress(literal: "0x7f.1")?.specialRange               // "loopback" (inet_aton reads it as 127.0.0.1)
/// IPAddress(literal: "[::ffff:10.0.0.1]")?.specialRange    // "private"
/// IPAddress(literal: "8.8.8.8")?.specialRange              // nil: public
/// IPAddress(literal: "push.example.net")                   // nil: a name, not an address
/// ```
public struct IPAddress: Sendable, Equatable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), in network order.
    public let bytes: [UInt8]

    /// A host as a URL writes it: IPv6 in brackets (or bare), IPv4 in any spelling `inet_aton` takes — and so
    /// `getaddrinfo` and libcurl — (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`); nil for a name. A trailing dot is
    /// ignored, as DNS ignores it.
    public init?(literal: String) {
        var host = Substring(literal)
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = host.dropFirst().dropLast()
        } else if host.hasSuffix(".") {
            host = host.dropLast()
        }
        // inet_aton stops at the first space and takes what came before it.
        guard !host.isEmpty, !host.contains(where: \.isWhitespace) else { return nil }
        var v6 = in6_addr()
        if host.contains(":") {
            guard inet_pton(AF_INET6, String(host), &v6) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        var v4 = in_addr()
        guard inet_aton(String(host), &v4) != 0 else { return nil }
        bytes = withUnsafeBytes(of: &v4) { Array($0) }
    }

    /// The address and port of a `sockaddr` (`sockaddr_in` or `sockaddr_in6`, as `getaddrinfo` and libcurl give
    /// it); nil for another family.
    public static func endpoint(family: Int32, sockaddr raw: UnsafeRawBufferPointer) -> (IPAddress, port: Int)? {
        let bytes: [UInt8]
        switch family {
        case AF_INET where raw.count >= MemoryLayout<sockaddr_in>.size: bytes = Array(raw[4..<8])
        case AF_INET6 where raw.count >= MemoryLayout<sockaddr_in6>.size: bytes = Array(raw[8..<24])
        default: return nil
        }
        return (IPAddress(bytes: bytes), Int(raw[2]) << 8 | Int(raw[3]))
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { _ = inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, &text, 64) }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: - Special-purpose ranges

    /// Which range outside the public internet the address is in (`"loopback"`, `"private"`, `"link-local"`,
    /// `"shared (CGNAT)"`, `"multicast"`, `"unspecified"`, `"reserved"`, …), or nil for a public unicast address.
    /// An IPv6 address that carries an IPv4 one (IPv4-mapped, NAT64's `64:ff9b::/96`, 6to4) is judged by that one.
    public var specialRange: String? {
        if bytes.count == 4 { return Self.range(of: bytes, in: Self.ipv4Ranges) }
        for (prefix, length, offset) in Self.embeddingIPv4 where Self.matches(bytes, prefix, length) {
            return Self.range(of: Array(bytes[offset..<offset + 4]), in: Self.ipv4Ranges)
        }
        if let named = Self.range(of: bytes, in: Self.ipv6Ranges) { return named }
        // Only 2000::/3 is global unicast; everything else is unassigned or special.
        return bytes[0] & 0xE0 == 0x20 ? nil : "reserved"
    }

    private static func range(of bytes: [UInt8], in table: [([UInt8], Int, String)]) -> String? {
        table.first { matches(bytes, $0.0, $0.1) }?.2
    }

    /// Whether the first `length` bits of `bytes` are `prefix`'s.
    private static func matches(_ bytes: [UInt8], _ prefix: [UInt8], _ length: Int) -> Bool {
        for bit in stride(from: 0, to: length, by: 8) {
            let index = bit / 8
            let mask: UInt8 = length - bit >= 8 ? 0xFF : ~(0xFF >> UInt8(length - bit))
            if bytes[index] & mask != prefix[index] & mask { return false }
        }
        return true
    }

    /// IANA's IPv4 special-purpose registry, less what is globally reachable.
    private static let ipv4Ranges: [([UInt8], Int, String)] = [
        ([0, 0, 0, 0], 8, "unspecified"),
        ([10, 0, 0, 0], 8, "private"),
        ([100, 64, 0, 0], 10, "shared (CGNAT)"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 0, 0, 0], 24, "reserved"),
        ([192, 0, 2, 0], 24, "documentation"),
        ([192, 168, 0, 0], 16, "private"),
        ([198, 18, 0, 0], 15, "reserved"),
        ([198, 51, 100, 0], 24, "documentation"),
        ([203, 0, 113, 0], 24, "documentation"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([255, 255, 255, 255], 32, "broadcast"),
        ([240, 0, 0, 0], 4, "reserved"),
    ]

    /// IPv6 prefixes that carry an IPv4 address, and the byte it starts at: IPv4-mapped `::ffff:0:0/96`, SIIT's
    /// `::ffff:0:0:0/96`, NAT64's `64:ff9b::/96`, 6to4's `2002::/16`.
    private static let embeddingIPv4: [([UInt8], Int, Int)] = [
        ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF], 96, 12),
        ([0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0], 96, 12),
        ([0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0], 96, 12),
        ([0x20, 0x02], 16, 2),
    ].map { prefix, length, offset in (prefix + [UInt8](repeating: 0, count: 16 - prefix.count), length, offset) }

    private static let ipv6Ranges: [([UInt8], Int, String)] = [
        ([], 128, "unspecified"),
        ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"),
        // IPv4-compatible (deprecated), NAT64's local-use prefix, discard-only.
        ([], 96, "reserved"),
        ([0, 0x64, 0xFF, 0x9B, 0, 1], 48, "reserved"),
        ([0x01, 0x00], 64, "reserved"),
        // IETF protocol assignments (Teredo among them), then documentation.
        ([0x20, 0x01], 23, "reserved"),
        ([0x20, 0x01, 0x0D, 0xB8], 32, "documentation"),
        ([0x3F, 0xFF], 20, "documentation"),
        ([0xFC], 7, "private"),
        ([0xFE, 0x80], 10, "link-local"),
        ([0xFE, 0xC0], 10, "reserved"),
        ([0xFF], 8, "multicast"),
    ].map { prefix, length, name in (prefix + [UInt8](repeating: 0, count: 16 - prefix.count), length, name) }
}
