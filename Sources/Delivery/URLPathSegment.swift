/// Text put into a request's path (a project id, a device token): letters, digits, `-`, `_` and `.` as they are,
/// anything else percent-encoded, so a value can never change the path it is put in.
public enum URLPathSegment {
    public static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return result
    }
}
