/// An `application/x-www-form-urlencoded` body: `&`-separated `name=value` fields, `+` for a space and `%XX` for any
/// byte, names and values UTF-8 once decoded.
///
/// ```swift
/// let form = try FormBody.parse("registration_id=42&data.score=4x8&data.note=a+b%21".utf8)
/// form.fields.map(\.name)   // ["registration_id", "data.score", "data.note"]
/// form.fields[2].value      // "a b!"
/// ```
///
/// Fields keep their order and their repeats: what a repeated name means is the reader's decision. Empty segments
/// (`a=1&&b=2`, a trailing `&`) are skipped, and a field without `=` has the empty value. Unlike the lenient WHATWG
/// algorithm, a `%` not followed by two hex digits and bytes that are not UTF-8 are errors, so a client that encodes
/// wrongly hears about it instead of having its text altered.
///
/// Related: [WHATWG URL, application/x-www-form-urlencoded parsing](
/// https://url.spec.whatwg.org/#application/x-www-form-urlencoded).
public struct FormBody: Sendable {
    public var fields: [(name: String, value: String)]

    /// Why a body is not form encoding; `message` names the field by position, never by its content.
    public struct Malformed: Error, Sendable, Equatable {
        public var message: String
    }

    public static func parse(_ body: some Collection<UInt8>) throws(Malformed) -> FormBody {
        var fields: [(name: String, value: String)] = []
        for (index, segment) in body.split(separator: UInt8(ascii: "&")).enumerated() {
            let separator = segment.firstIndex(of: UInt8(ascii: "="))
            let name = segment[..<(separator ?? segment.endIndex)]
            let value = separator.map { segment[segment.index(after: $0)...] } ?? segment[segment.endIndex...]
            fields.append((try decode(name, field: index + 1), try decode(value, field: index + 1)))
        }
        return FormBody(fields: fields)
    }

    private static func decode(_ encoded: some Collection<UInt8>, field: Int) throws(Malformed) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.count)
        var iterator = encoded.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    throw Malformed(message: "field \(field): % must be followed by two hex digits")
                }
                bytes.append(high << 4 | low)
            default:
                bytes.append(byte)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Malformed(message: "field \(field) is not UTF-8 once percent-decoded")
        }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
