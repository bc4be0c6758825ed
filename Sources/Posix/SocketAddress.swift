import Glibc

/// One address `getaddrinfo` gave for a host, as bytes `connect` and `bind` take.
public struct SocketAddress: Sendable {
    public var family: Int32
    public var bytes: [UInt8]

    /// Why a host has no address, in libcurl's words (what a failed request reports).
    public struct ResolveError: Error, Sendable {
        public var reason: String
    }

    /// The TCP addresses of `host` (blocking: `getaddrinfo`), in the resolver's order of preference.
    public static func lookUp(host: String, port: Int, numericOnly: Bool) throws(ResolveError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = numericOnly ? AI_NUMERICHOST | AI_NUMERICSERV : AI_NUMERICSERV | AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw ResolveError(reason: "Couldn't resolve host name")
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = current.pointee.ai_addr, current.pointee.ai_protocol == Int32(IPPROTO_TCP)
                || current.pointee.ai_protocol == 0 {
                let bytes = UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen))
                addresses.append(SocketAddress(family: current.pointee.ai_family, bytes: Array(bytes)))
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw ResolveError(reason: "Couldn't resolve host name") }
        return addresses
    }

    /// Whether `host` is an IP address (no SNI then, and the certificate is checked for the address).
    public static func isIPAddress(_ host: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }
}
