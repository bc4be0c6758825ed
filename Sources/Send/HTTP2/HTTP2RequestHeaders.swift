import CNGHTTP2

/// A request's header fields as nghttp2 takes them (`nghttp2_nv`), built once and reused while the target and
/// headers stay the same, which for one app is every request made with one access token; only `content-length` is
/// new each time. nghttp2 copies the fields when a request is submitted, so they need to live only for that call.
///
/// Names are lowercased as HTTP/2 requires; fields HTTP/2 forbids or carries otherwise are left out; credentials
/// are never indexed by HPACK (`NGHTTP2_NV_FLAG_NO_INDEX`).
final class HTTP2RequestHeaders {
    private var authority = ""
    private var path = ""
    private var source: [(name: String, value: String)] = []
    private var built = false
    /// Every name and value, back to back; `fields` point into it.
    private var storage: UnsafeMutableRawBufferPointer?
    /// The fields, `content-length` last (its value pointing at `contentLength`).
    private var fields: [nghttp2_nv] = []
    private let contentLength = UnsafeMutablePointer<UInt8>.allocate(capacity: 20)

    /// Headers HTTP/2 forbids or carries otherwise (`host` is `:authority`; `expect` has no 100-continue to wait for;
    /// `content-length` is added per request).
    private static let dropped: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "expect", "te",
        "content-length",
    ]
    private static let sensitive: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    deinit {
        storage?.deallocate()
        contentLength.deallocate()
    }

    /// Calls `body` with the fields of a POST of `bodyLength` bytes to `target` with `headers`.
    func withFields<Result>(
        target: HTTPSTarget, headers: [(name: String, value: String)], bodyLength: Int,
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> Result
    ) -> Result {
        if !built || authority != target.authority || path != target.path || !Self.same(headers, source) {
            rebuild(target: target, headers: headers)
        }
        fields[fields.count - 1].valuelen = Self.digits(of: bodyLength, into: contentLength)
        return fields.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
    }

    /// Writes `value`'s decimal digits at `output`; returns how many.
    private static func digits(of value: Int, into output: UnsafeMutablePointer<UInt8>) -> Int {
        var count = 1
        var scale = 1
        while value / scale >= 10 {
            scale *= 10
            count += 1
        }
        var rest = value
        for index in 0..<count {
            output[index] = UInt8(ascii: "0") + UInt8(rest / scale)
            rest %= scale
            scale /= 10
        }
        return count
    }

    private func rebuild(target: HTTPSTarget, headers: [(name: String, value: String)]) {
        authority = target.authority
        path = target.path
        source = headers
        built = true
        var pairs: [(name: [UInt8], value: [UInt8], flags: UInt8)] = [
            (Array(":method".utf8), Array("POST".utf8), 0),
            (Array(":scheme".utf8), Array("https".utf8), 0),
            (Array(":authority".utf8), Array(target.authority.utf8), 0),
            (Array(":path".utf8), Array(target.path.utf8), 0),
        ]
        for header in headers {
            let name = header.name.lowercased()
            guard !name.isEmpty, !Self.dropped.contains(name) else { continue }
            let flags = Self.sensitive.contains(name) ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : 0
            pairs.append((Array(name.utf8), Array(header.value.utf8), flags))
        }
        pairs.append((Array("content-length".utf8), [], 0))

        storage?.deallocate()
        let size = pairs.reduce(0) { $0 + $1.name.count + $1.value.count }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, size), alignment: 1)
        storage = bytes
        fields.removeAll(keepingCapacity: true)
        var offset = 0
        /// Where `part` is copied in storage (any valid address when it is empty).
        func place(_ part: [UInt8]) -> UnsafeMutablePointer<UInt8> {
            guard !part.isEmpty else { return contentLength }
            let start = bytes.baseAddress!.advanced(by: offset)
            part.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            offset += part.count
            return start.assumingMemoryBound(to: UInt8.self)
        }
        for pair in pairs {
            fields.append(nghttp2_nv(
                name: place(pair.name), value: place(pair.value), namelen: pair.name.count,
                valuelen: pair.value.count, flags: pair.flags))
        }
        // Its digits are written per request.
        fields[fields.count - 1].value = contentLength
    }

    private static func same(_ lhs: [(name: String, value: String)], _ rhs: [(name: String, value: String)]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in lhs.indices where lhs[index].name != rhs[index].name || lhs[index].value != rhs[index].value {
            return false
        }
        return true
    }
}
