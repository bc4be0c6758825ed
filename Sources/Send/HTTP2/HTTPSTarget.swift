/// Where an `https://` URL points: the host and port to connect to, the `:authority` and `:path` of the request.
///
/// ```swift
/// HTTPSTarget("https://fcm.googleapis.com/v1/projects/p/messages:send")
/// // host "fcm.googleapis.com", port 443, authority "fcm.googleapis.com", path "/v1/projects/p/messages:send"
/// ```
///
/// Only what Herald's endpoints need: no user info, and nil for anything else (the caller then leaves the request
/// to libcurl, which knows every URL).
struct HTTPSTarget: Equatable {
    /// A name, or an IP address (an IPv6 one without its brackets).
    var host: String
    var port: Int
    /// `host[:port]` as the URL wrote it.
    var authority: String
    /// The path and query, `/` when the URL has none.
    var path: String

    init?(_ url: String) {
        let bytes = Array(url.utf8)
        guard bytes.count > 8, String(decoding: bytes.prefix(8), as: UTF8.self).lowercased() == "https://" else {
            return nil
        }
        let rest = bytes[8...]
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        let authority = rest[rest.startIndex..<authorityEnd]
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }

        var hostPart = authority[...]
        var portText: ArraySlice<UInt8> = []
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostPart = authority[(authority.startIndex + 1)..<close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostPart = authority[authority.startIndex..<colon]
            portText = authority[(colon + 1)...]
        }
        guard !hostPart.isEmpty else { return nil }
        var port = 443
        if !portText.isEmpty {
            guard portText.count <= 5, portText.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  let value = Int(String(decoding: portText, as: UTF8.self)), (1...65_535).contains(value)
            else { return nil }
            port = value
        }
        // The fragment never goes on the wire.
        var pathPart = bytes[authorityEnd...]
        if let hash = pathPart.firstIndex(of: UInt8(ascii: "#")) { pathPart = pathPart[..<hash] }
        host = String(decoding: hostPart, as: UTF8.self)
        self.port = port
        self.authority = String(decoding: authority, as: UTF8.self)
        let leadingSlash = pathPart.first == UInt8(ascii: "?") ? "/" : ""
        path = pathPart.isEmpty ? "/" : leadingSlash + String(decoding: pathPart, as: UTF8.self)
    }

    /// The key connections are shared under.
    var origin: String { host.lowercased() + ":" + String(port) }
}
