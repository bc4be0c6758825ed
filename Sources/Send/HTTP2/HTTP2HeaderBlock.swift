/// A request's HPACK header block, built once and reused while the target and headers stay the same, which for one
/// app is every request made with one access token; only `content-length` is new each time.
///
/// No field goes into a dynamic table, so the block means the same on every connection: `:method: POST` and
/// `:scheme: https` are static-table indexes, everything else a literal without indexing (the `authorization`
/// header never-indexed, as a credential), names lowercased as HTTP/2 requires.
struct HTTP2HeaderBlock {
    private var authority = ""
    private var path = ""
    private var source: [(name: String, value: String)] = []
    private var built = false
    /// The fields before `content-length`.
    private(set) var prefix: [UInt8] = []

    /// Headers HTTP/2 forbids or carries otherwise (`host` is `:authority`; `expect` has no 100-continue to wait for;
    /// `content-length` is added per request).
    private static let dropped: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "expect", "te",
        "content-length",
    ]
    private static let sensitive: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// Appends the block of a POST of `bodyLength` bytes to `target` with `headers`.
    mutating func write(
        target: HTTPSTarget, headers: [(name: String, value: String)], bodyLength: Int, into output: inout [UInt8]
    ) {
        if !built || authority != target.authority || path != target.path || !Self.same(headers, source) {
            rebuild(target: target, headers: headers)
        }
        output.append(contentsOf: prefix)
        Self.contentLength(bodyLength, into: &output)
    }

    /// `content-length` (static name index 28) as a literal without indexing, its digits raw.
    static func contentLength(_ length: Int, into output: inout [UInt8]) {
        HPACKEncoder.integer(28, prefixBits: 4, flags: 0x00, into: &output)
        var digits = 1
        var scale = 1
        while length / scale >= 10 {
            scale *= 10
            digits += 1
        }
        output.append(UInt8(digits))
        var rest = length
        while scale > 0 {
            output.append(UInt8(ascii: "0") + UInt8(rest / scale))
            rest %= scale
            scale /= 10
        }
    }

    private mutating func rebuild(target: HTTPSTarget, headers: [(name: String, value: String)]) {
        authority = target.authority
        path = target.path
        source = headers
        built = true
        prefix.removeAll(keepingCapacity: true)
        HPACKEncoder.indexed(3, into: &prefix)  // :method POST
        HPACKEncoder.indexed(7, into: &prefix)  // :scheme https
        HPACKEncoder.literal(name: Array(":authority".utf8), value: target.authority.utf8, into: &prefix)
        HPACKEncoder.literal(name: Array(":path".utf8), value: target.path.utf8, into: &prefix)
        for header in headers {
            let name = header.name.lowercased()
            guard !name.isEmpty, !Self.dropped.contains(name) else { continue }
            HPACKEncoder.literal(
                name: Array(name.utf8), value: header.value.utf8, sensitive: Self.sensitive.contains(name),
                into: &prefix)
        }
    }

    private static func same(_ lhs: [(name: String, value: String)], _ rhs: [(name: String, value: String)]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in lhs.indices where lhs[index].name != rhs[index].name || lhs[index].value != rhs[index].value {
            return false
        }
        return true
    }
}
