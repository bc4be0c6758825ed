import Foundation

/// Appends `string` as a JSON string literal (quotes included), escaping what JSON requires.
public func appendJSONString(_ string: String, to output: inout String) {
    output += "\""
    for scalar in string.unicodeScalars {
        switch scalar {
        case "\"": output += "\\\""
        case "\\": output += "\\\\"
        case "\n": output += "\\n"
        case "\r": output += "\\r"
        case "\t": output += "\\t"
        case let control where control.value < 0x20:
            let hex = String(control.value, radix: 16)
            output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: output.unicodeScalars.append(scalar)
        }
    }
    output += "\""
}
