/// A JSON value that keeps what the sender wrote: numbers as their lexeme, object members in their order.
///
/// ```swift
/// let message = try JSON.parse(#"{"to":"tok","time_to_live":60,"x":1e3}"#.utf8)
/// message["time_to_live"]?.int64Value   // 60
/// message["x"]?.int64Value              // nil: 1e3 is not an integer lexeme
/// message.serialized()                  // {"to":"tok","time_to_live":60,"x":1e3}
/// ```
///
/// Equality is exact: strings and keys compare by their UTF-8 bytes (as RFC 8259 §8.3 compares names), not by
/// Unicode canonical equivalence; numbers compare by lexeme (`1.0 != 1`); objects compare member by member in
/// order. Two values are equal exactly when they serialize to the same bytes.
///
/// Related: [RFC 8259](https://www.rfc-editor.org/rfc/rfc8259).
public enum JSON: Sendable {
    case null
    case bool(Bool)
    /// A number as its JSON lexeme: `-12`, `10.0`, `1e3`. It must follow RFC 8259's number grammar; `parse`,
    /// `int(_:)`, `double(_:)` and the literals guarantee that, `serialized()` trusts it.
    case number(String)
    case string(String)
    case array([JSON])
    /// Members in order, each key once.
    case object([(key: String, value: JSON)])
}

// MARK: - Equality

extension JSON: Equatable {
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(left), .bool(right)): left == right
        case let (.number(left), .number(right)): sameBytes(left, right)
        case let (.string(left), .string(right)): sameBytes(left, right)
        case let (.array(left), .array(right)): left == right
        case let (.object(left), .object(right)):
            left.count == right.count
                && zip(left, right).allSatisfy { sameBytes($0.key, $1.key) && $0.value == $1.value }
        default: false
        }
    }
}

/// Byte equality, unlike `String.==`, which treats canonically equivalent strings (`é` and `e` + U+0301) as equal.
@inline(__always)
private func sameBytes(_ left: String, _ right: String) -> Bool {
    left.utf8.count == right.utf8.count && left.utf8.elementsEqual(right.utf8)
}

// MARK: - Reading values

extension JSON {
    /// The number as an `Int64`, only when its lexeme has no fraction and no exponent and it fits:
    /// `60` and `-0` yes; `60.0`, `6e1` and `9223372036854775808` no.
    public var int64Value: Int64? {
        guard case .number(let lexeme) = self,
              !lexeme.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") })
        else { return nil }
        return Int64(lexeme)
    }

    /// The number as the nearest `Double`; nil for a magnitude beyond `Double`'s range (`1e400`).
    public var doubleValue: Double? {
        guard case .number(let lexeme) = self, let value = Double(lexeme), value.isFinite else { return nil }
        return value
    }

    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    public var arrayValue: [JSON]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    public var objectValue: [(key: String, value: JSON)]? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    public var isNull: Bool {
        if case .null = self { true } else { false }
    }

    /// The member named `key` (compared byte for byte) of an object; nil for a missing key or a non-object.
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { sameBytes($0.key, key) })?.value
    }
}

// MARK: - Building values

extension JSON {
    public static func int(_ value: some BinaryInteger) -> JSON {
        .number(String(value))
    }

    /// A number from a `Double`, in Swift's shortest round-tripping form (`0.1`, `5.0`, `1e+20`).
    /// JSON has no infinities or NaN: a non-finite value becomes `null`.
    public static func double(_ value: Double) -> JSON {
        value.isFinite ? .number(value.description) : .null
    }

    /// An object from members in order; a repeated key keeps its first position and its last value,
    /// as `parse` does.
    public init(members: some Sequence<(String, JSON)>) {
        var builder = ObjectBuilder()
        for (key, value) in members { builder.add(key, value) }
        self = .object(builder.members)
    }
}

extension JSON: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) { self.init(members: elements) }
}

/// Collects object members, keeping each key once: a repeat replaces the value in place.
/// Small objects search linearly; past a few members a byte-keyed index keeps hostile input (many keys) linear.
private struct ObjectBuilder {
    var members: [(key: String, value: JSON)] = []
    private var index: [ExactKey: Int]?
    private static let indexThreshold = 12

    mutating func add(_ key: String, _ value: JSON) {
        if let position = position(of: key) {
            members[position].value = value
            return
        }
        members.append((key, value))
        if index != nil {
            index![ExactKey(key)] = members.count - 1
        } else if members.count > Self.indexThreshold {
            var built: [ExactKey: Int] = [:]
            built.reserveCapacity(members.count * 2)
            for (position, member) in members.enumerated() { built[ExactKey(member.key)] = position }
            index = built
        }
    }

    private func position(of key: String) -> Int? {
        if let index { return index[ExactKey(key)] }
        return members.firstIndex(where: { sameBytes($0.key, key) })
    }
}

/// A `String` hashed and compared by its UTF-8 bytes.
private struct ExactKey: Hashable {
    let string: String
    init(_ string: String) { self.string = string }

    static func == (lhs: ExactKey, rhs: ExactKey) -> Bool { sameBytes(lhs.string, rhs.string) }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil { for byte in string.utf8 { hasher.combine(byte) } }
    }
}

// MARK: - Serializing

extension JSON {
    /// Compact JSON: no whitespace, members in order, strings escaped only where JSON requires
    /// (see `appendJSONString`). Parsing then serializing reproduces the input modulo whitespace,
    /// provided the input used the same escapes (`\/` and `\u0041` come back as `/` and `A`) and no repeated keys.
    public func serialized() -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the compact serialization (see `serialized()`) as UTF-8.
    public func append(to output: inout [UInt8]) {
        switch self {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let value):
            output.append(contentsOf: value ? "true".utf8 : "false".utf8)
        case .number(let lexeme):
            output.append(contentsOf: lexeme.utf8)
        case .string(let value):
            appendJSONString(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                element.append(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (position, member) in members.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                appendJSONString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                member.value.append(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }
}

extension JSON: CustomStringConvertible {
    public var description: String { serialized() }
}

// MARK: - Parsing

/// Why input is not JSON, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Offset from the start of the input of the byte where parsing stopped.
    public var offset: Int
    /// A short phrase for humans, e.g. `leading zero in number`.
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(message) at byte \(offset)" }
}

extension JSON {
    /// Containers nested deeper than this are rejected, so hostile input cannot exhaust the stack.
    public static let maximumDepth = 64

    /// Parses one JSON text (RFC 8259, strictly): UTF-8 only, no byte order mark, no trailing data, no leading
    /// zeros, no unescaped control characters, no lone surrogate escapes, at most `maximumDepth` levels.
    /// A repeated object key keeps its first position and its last value.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSON {
        let result = bytes.withContiguousStorageIfAvailable { JSONParser.parse($0) }
            ?? Array(bytes).withUnsafeBufferPointer { JSONParser.parse($0) }
        return try result.get()
    }
}

private extension UInt8 {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let digit0 = UInt8(ascii: "0")
    static let digit9 = UInt8(ascii: "9")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let dot = UInt8(ascii: ".")

    var isDigit: Bool { self >= .digit0 && self <= .digit9 }
}

/// A recursive-descent parser over the input's bytes. Strings without escapes are decoded as one slice;
/// strings with escapes are unescaped into a reused scratch buffer.
private struct JSONParser {
    let input: UnsafeBufferPointer<UInt8>
    var position = 0
    var depth = 0
    var scratch: [UInt8] = []

    static func parse(_ input: UnsafeBufferPointer<UInt8>) -> Result<JSON, JSONParseError> {
        var parser = JSONParser(input: input)
        return Result { () throws(JSONParseError) in try parser.parseDocument() }
    }

    private init(input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    private mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard position == input.count else { throw failure("unexpected data after the JSON value") }
        return value
    }

    // MARK: Values

    private mutating func parseValue() throws(JSONParseError) -> JSON {
        guard position < input.count else { throw failure("unexpected end of input, expected a value") }
        switch input[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case .quote: return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case .minus, .digit0 ... .digit9: return try parseNumber()
        default: throw unexpectedByte(expected: "a value")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSON {
        try enterContainer()
        position += 1
        skipWhitespace()
        var elements: [JSON] = []
        if position < input.count, input[position] == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard position < input.count else { throw failure("unexpected end of input, expected ',' or ']'") }
            switch input[position] {
            case .comma:
                position += 1
            case UInt8(ascii: "]"):
                position += 1
                depth -= 1
                return .array(elements)
            default:
                throw unexpectedByte(expected: "',' or ']'")
            }
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSON {
        try enterContainer()
        position += 1
        skipWhitespace()
        var builder = ObjectBuilder()
        if position < input.count, input[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object([])
        }
        while true {
            skipWhitespace()
            guard position < input.count else { throw failure("unexpected end of input, expected a key") }
            guard input[position] == .quote else { throw unexpectedByte(expected: "a string key") }
            let key = try parseString()
            skipWhitespace()
            guard position < input.count else { throw failure("unexpected end of input, expected ':'") }
            guard input[position] == .colon else { throw unexpectedByte(expected: "':'") }
            position += 1
            skipWhitespace()
            builder.add(key, try parseValue())
            skipWhitespace()
            guard position < input.count else { throw failure("unexpected end of input, expected ',' or '}'") }
            switch input[position] {
            case .comma:
                position += 1
            case UInt8(ascii: "}"):
                position += 1
                depth -= 1
                return .object(builder.members)
            default:
                throw unexpectedByte(expected: "',' or '}'")
            }
        }
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        guard depth <= JSON.maximumDepth else {
            throw failure("nesting deeper than \(JSON.maximumDepth) levels")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        guard input.count - position >= count,
              UnsafeBufferPointer(rebasing: input[position..<position + count]).elementsEqual(expected)
        else { throw failure("invalid literal, expected '\(literal)'") }
        position += count
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = position
        if input[position] == .minus { position += 1 }
        guard position < input.count, input[position].isDigit else {
            throw failure("expected a digit after '-'")
        }
        if input[position] == .digit0 {
            position += 1
            if position < input.count, input[position].isDigit {
                throw failure("leading zero in number", at: position - 1)
            }
        } else {
            skipDigits()
        }
        if position < input.count, input[position] == .dot {
            position += 1
            guard position < input.count, input[position].isDigit else {
                throw failure("expected a digit after the decimal point")
            }
            skipDigits()
        }
        if position < input.count, input[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < input.count, input[position] == .plus || input[position] == .minus { position += 1 }
            guard position < input.count, input[position].isDigit else {
                throw failure("expected a digit in the exponent")
            }
            skipDigits()
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self))
    }

    private mutating func skipDigits() {
        while position < input.count, input[position].isDigit { position += 1 }
    }

    private mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    // MARK: Strings

    /// Parses a string whose opening quote is at `position`.
    private mutating func parseString() throws(JSONParseError) -> String {
        let opening = position
        position += 1
        let start = position
        while position < input.count {
            let byte = input[position]
            if byte == .quote {
                let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
                position += 1
                return text
            } else if byte == .backslash {
                return try parseEscapedString(from: start, opening: opening)
            } else if byte < 0x20 {
                throw failure("unescaped control character in string")
            } else if byte < 0x80 {
                position += 1
            } else {
                try skipMultibyteScalar()
            }
        }
        throw failure("unterminated string", at: opening)
    }

    /// Continues `parseString` at the first backslash, unescaping into `scratch`.
    private mutating func parseEscapedString(from start: Int, opening: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var runStart = start
        while position < input.count {
            let byte = input[position]
            if byte == .quote {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
                position += 1
                return String(decoding: scratch, as: UTF8.self)
            } else if byte == .backslash {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
                try parseEscape()
                runStart = position
            } else if byte < 0x20 {
                throw failure("unescaped control character in string")
            } else if byte < 0x80 {
                position += 1
            } else {
                try skipMultibyteScalar()
            }
        }
        throw failure("unterminated string", at: opening)
    }

    /// Unescapes the escape sequence at `position` into `scratch`.
    private mutating func parseEscape() throws(JSONParseError) {
        let escape = position
        position += 1
        guard position < input.count else { throw failure("unterminated string") }
        let letter = input[position]
        position += 1
        switch letter {
        case .quote, .backslash, UInt8(ascii: "/"): scratch.append(letter)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try parseHex4()
            var scalar = unit
            switch unit {
            case 0xD800...0xDBFF:
                guard input.count - position >= 2,
                      input[position] == .backslash, input[position + 1] == UInt8(ascii: "u")
                else { throw failure("lone high surrogate escape", at: escape) }
                position += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw failure("high surrogate escape not followed by a low surrogate", at: escape)
                }
                scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            case 0xDC00...0xDFFF:
                throw failure("lone low surrogate escape", at: escape)
            default:
                break
            }
            appendUTF8(scalar)
        default:
            throw failure("invalid escape sequence", at: escape)
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard input.count - position >= 4 else { throw failure("expected four hex digits after \\u") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[position]
            let digit: UInt8
            switch byte {
            case .digit0 ... .digit9: digit = byte - .digit0
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("expected four hex digits after \\u")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Steps over one well-formed UTF-8 sequence of two to four bytes (Unicode 15, table 3-7): no overlong forms,
    /// no encoded surrogates, nothing above U+10FFFF.
    private mutating func skipMultibyteScalar() throws(JSONParseError) {
        let lead = input[position]
        let continuations: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: continuations = 1
        case 0xE0: continuations = 2; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: continuations = 2
        case 0xED: continuations = 2; secondRange = 0x80...0x9F
        case 0xF0: continuations = 3; secondRange = 0x90...0xBF
        case 0xF1...0xF3: continuations = 3
        case 0xF4: continuations = 3; secondRange = 0x80...0x8F
        default: throw failure("invalid UTF-8")
        }
        guard input.count - position > continuations, secondRange.contains(input[position + 1]) else {
            throw failure("invalid UTF-8")
        }
        for offset in stride(from: 2, through: continuations, by: 1) where input[position + offset] & 0xC0 != 0x80 {
            throw failure("invalid UTF-8")
        }
        position += continuations + 1
    }

    // MARK: Errors

    private func failure(_ message: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(offset: offset ?? position, message: message)
    }

    private func unexpectedByte(expected: String) -> JSONParseError {
        let byte = input[position]
        if byte >= 0x80 { return failure("invalid UTF-8 or unexpected character, expected \(expected)") }
        if byte >= 0x20 && byte < 0x7F {
            return failure("unexpected character '\(Character(Unicode.Scalar(byte)))', expected \(expected)")
        }
        return failure("unexpected byte 0x\(String(byte, radix: 16)), expected \(expected)")
    }
}
