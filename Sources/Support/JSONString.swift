/// Appends `string` as a JSON string literal (quotes included) to UTF-8 bytes.
///
/// Escapes only what RFC 8259 requires: `"`, `\` and the control characters U+0000...U+001F
/// (`\b \f \n \r \t` in their short forms, the rest as `\u00XX`). `/` and non-ASCII text are copied as they are.
public func appendJSONString(_ string: String, to output: inout [UInt8]) {
    let copied: Void? = string.utf8.withContiguousStorageIfAvailable { appendJSONString(utf8: $0, to: &output) }
    if copied == nil {
        Array(string.utf8).withUnsafeBufferPointer { appendJSONString(utf8: $0, to: &output) }
    }
}

/// Appends `string` as a JSON string literal (quotes included), escaping what JSON requires.
public func appendJSONString(_ string: String, to output: inout String) {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(string.utf8.count + 2)
    appendJSONString(string, to: &bytes)
    output += String(decoding: bytes, as: UTF8.self)
}

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

private func appendJSONString(utf8: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
    // No `reserveCapacity` here: asked for exactly what one more string needs, an array grows by that much
    // instead of doubling, and a document of many strings is copied over and over.
    output.append(UInt8(ascii: "\""))
    // Copy runs that need no escaping in one call; most strings are one run.
    var runStart = 0
    for index in utf8.indices {
        let byte = utf8[index]
        guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
        runStart = index + 1
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): output.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"))
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            output.append(contentsOf: [
                UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)],
            ])
        }
    }
    output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
    output.append(UInt8(ascii: "\""))
}
