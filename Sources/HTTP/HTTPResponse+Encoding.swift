/// What the `Connection` header of a response says.
enum ConnectionHeader {
    /// HTTP/1.1 keep-alive, the default, needs no header.
    case none
    case close
    /// HTTP/1.0 keep-alive must be confirmed.
    case keepAlive
}

extension HTTPResponse {
    /// Appends the response as it goes on the wire: status line, the handler's headers (minus the framing
    /// headers the server owns), `Content-Length`, `Connection`, the body.
    ///
    /// `omitBody` is for `HEAD`: the length is announced, the body is not sent. 1xx, 204 and 304 carry neither.
    func encode(into output: inout [UInt8], connection: ConnectionHeader, omitBody: Bool) {
        output.reserveCapacity(output.count + 128 + body.count)
        output.append(contentsOf: statusLine(status))
        for header in headers where !Self.isFramingHeader(header.name) {
            Self.appendSanitized(header.name, to: &output)
            output.append(0x3A)
            output.append(0x20)
            Self.appendSanitized(header.value, to: &output)
            output.append(0x0D)
            output.append(0x0A)
        }
        let bodyless = status < 200 || status == 204 || status == 304
        if !bodyless {
            output.append(contentsOf: "Content-Length: ".utf8)
            Self.appendDecimal(body.count, to: &output)
            output.append(0x0D)
            output.append(0x0A)
        }
        switch connection {
        case .none: break
        case .close: output.append(contentsOf: "Connection: close\r\n".utf8)
        case .keepAlive: output.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        output.append(0x0D)
        output.append(0x0A)
        if !bodyless && !omitBody { output.append(contentsOf: body) }
    }

    /// `Content-Length`, `Transfer-Encoding` and `Connection` describe framing the server decides.
    private static func isFramingHeader(_ name: String) -> Bool {
        switch name.utf8.count {
        case 10, 14, 17:
            let lowered = name.lowercased()
            return lowered == "connection" || lowered == "content-length" || lowered == "transfer-encoding"
        default:
            return false
        }
    }

    /// CR, LF and NUL would let a header value end the head early (response splitting); they become spaces.
    private static func appendSanitized(_ text: String, to output: inout [UInt8]) {
        for byte in text.utf8 {
            output.append(byte == 0x0D || byte == 0x0A || byte == 0 ? 0x20 : byte)
        }
    }

    private static func appendDecimal(_ value: Int, to output: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count = 0
        var remaining = UInt(max(0, value))
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - count] = UInt8(0x30 + remaining % 10)
                remaining /= 10
                count += 1
            } while remaining > 0
            output.append(contentsOf: buffer[(24 - count)...])
        }
    }
}

private let statusLines: [[UInt8]] = (100..<600).map { status in
    Array("HTTP/1.1 \(status) \(HTTPResponse.reason(for: status))\r\n".utf8)
}

private func statusLine(_ status: Int) -> [UInt8] {
    (100..<600).contains(status) ? statusLines[status - 100] : Array("HTTP/1.1 500 Internal Server Error\r\n".utf8)
}

extension HTTPResponse {
    /// The interim response that tells a client waiting on `Expect: 100-continue` to send its body.
    static let continueBytes: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}
