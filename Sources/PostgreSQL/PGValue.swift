/// A value bound to a statement parameter (`$1`, `$2`, …). Values are always bound, never spliced into SQL.
///
/// They travel in PostgreSQL's text format and the server infers each parameter's type from the statement, so a
/// parameter whose type the statement does not decide (`SELECT $1`) is text unless cast (`$1::bigint`).
public enum PGValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bool(Bool)
    /// `bytea`.
    case bytes([UInt8])

    public static func optional(_ value: String?) -> PGValue { value.map(PGValue.text) ?? .null }
    public static func optional(_ value: Int64?) -> PGValue { value.map(PGValue.integer) ?? .null }
    public static func optional(_ value: Double?) -> PGValue { value.map(PGValue.real) ?? .null }
    public static func optional(_ value: Bool?) -> PGValue { value.map(PGValue.bool) ?? .null }

    /// The text form PostgreSQL parses for the parameter; nil for NULL.
    var textFormat: String? {
        switch self {
        case .null: return nil
        case .integer(let integer): return String(integer)
        case .real(let real):
            // Swift prints the shortest form that reads back to the same Double; PostgreSQL spells the specials.
            if real.isNaN { return "NaN" }
            if real.isInfinite { return real > 0 ? "Infinity" : "-Infinity" }
            return String(real)
        case .text(let text): return text
        case .bool(let bool): return bool ? "t" : "f"
        case .bytes(let bytes):
            let digits: [UInt8] = Array("0123456789abcdef".utf8)
            var hex = [UInt8](repeating: 0, count: 2 + bytes.count * 2)
            hex[0] = UInt8(ascii: "\\")
            hex[1] = UInt8(ascii: "x")
            for (offset, byte) in bytes.enumerated() {
                hex[2 + offset * 2] = digits[Int(byte >> 4)]
                hex[3 + offset * 2] = digits[Int(byte & 0x0f)]
            }
            return String(decoding: hex, as: UTF8.self)
        }
    }
}

extension PGValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(nilLiteral: ()) { self = .null }
}
