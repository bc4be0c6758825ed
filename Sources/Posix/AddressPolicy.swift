/// Where a connection to an endpoint Herald did not choose may go (SPEC §19): a Web Push subscription's endpoint
/// comes from whoever subscribed on the site, so unless the app allows private endpoints (`allow_private_endpoints`,
/// the sandbox and tests), only public unicast addresses (`IPAddress.specialRange` nil) on port 443.
///
/// Checked twice: on the host as written, before any DNS (`refusal(host:port:)`, at ingest), and on every address
/// DNS gave, at connect time (`permits`), so a name that resolves to a private address — or starts to, DNS
/// rebinding — is never connected to.
///
/// ```swift
/// let policy = AddressPolicy(allowsPrivate: false)
/// policy.refusal(host: "0x7f.0.0.1", port: 443)   // "0x7f.0.0.1 is a loopback address (127.0.0.1)"
/// policy.refusal(host: "push.example.net", port: 443)   // nil: judged after DNS
/// policy.permits(address)                          // for each address getaddrinfo gave
/// ```
public struct AddressPolicy: Sendable, Equatable {
    /// Private, loopback and every other special address, on any port.
    public var allowsPrivate: Bool

    public static let port = 443

    public init(allowsPrivate: Bool) {
        self.allowsPrivate = allowsPrivate
    }

    /// Whether a socket may connect to `address` (its IP and its port).
    public func permits(_ address: SocketAddress) -> Bool {
        address.bytes.withUnsafeBytes { permits(family: address.family, sockaddr: $0) }
    }

    /// Whether a socket may connect to the `sockaddr` in `raw` (libcurl's `curl_sockaddr`).
    public func permits(family: Int32, sockaddr raw: UnsafeRawBufferPointer) -> Bool {
        guard !allowsPrivate else { return true }
        guard let (address, port) = IPAddress.endpoint(family: family, sockaddr: raw) else { return false }
        return port == Self.port && address.specialRange == nil
    }

    /// Why `host` (as a URL writes it) on `port` is refused without looking it up, or nil: an address in a special
    /// range in any spelling, `localhost` and `*.localhost` (RFC 6761), a port but 443. A name passes: `permits`
    /// judges its addresses.
    public func refusal(host: String, port: Int) -> String? {
        guard !allowsPrivate else { return nil }
        if let address = IPAddress(literal: host), let range = address.specialRange {
            let spelled = "\(address)" == host || "[\(address)]" == host ? "" : " (\(address))"
            return "\(host) is a\(range.first.map { "aeiou".contains($0) } == true ? "n" : "") \(range) address"
                + spelled
        }
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" || name.hasSuffix(".localhost") { return "\(host) is this machine" }
        if port != Self.port { return "port \(port) is not \(Self.port)" }
        return nil
    }
}
