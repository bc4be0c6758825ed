import Support
import Testing

private func parse(_ text: String) throws -> JSON {
    try JSON.parse(Array(text.utf8))
}

private func parseError(_ bytes: [UInt8]) -> JSONParseError? {
    do {
        _ = try JSON.parse(bytes)
        return nil
    } catch {
        return error
    }
}

@Suite struct JSONParsingTests {
    @Test(arguments: [
        "null", "true", "false", "0", "-0", "12", "-12", "10.0", "1e3", "1E+3", "-1.5e-7", "0.000",
        #""""#, #""text""#, "[]", "{}", "[1,2,3]", #"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
        #"{"z":1,"a":2,"m":3}"#, #""é 日本 😀""#, #""a/b""#, #""quote \" backslash \\ newline \n tab \t""#,
        #""\b\f\r\u0001\u001f""#, #"[[[[]]]]"#, "123456789012345678901234567890",
    ])
    func roundTripsCanonicalText(text: String) throws {
        #expect(try parse(text).serialized() == text)
    }

    @Test func serializationDropsWhitespaceOnly() throws {
        let text = " \t\r\n{ \"to\" : \"tok\" ,\n \"data\" : { \"a\" : [ 1 , 2.50 , 1e3 ] } }\n"
        #expect(try parse(text).serialized() == #"{"to":"tok","data":{"a":[1,2.50,1e3]}}"#)
    }

    @Test func keyOrderIsKept() throws {
        let value = try parse(#"{"b":1,"a":2}"#)
        #expect(value.objectValue?.map(\.key) == ["b", "a"])
    }

    @Test func repeatedKeyKeepsFirstPositionAndLastValue() throws {
        let value = try parse(#"{"a":1,"b":2,"a":3}"#)
        #expect(value.serialized() == #"{"a":3,"b":2}"#)
        #expect(value["a"] == .int(3))
    }

    @Test func repeatedKeysInLargeObjectsAreFoundThroughTheIndex() throws {
        let members = (0..<100).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let value = try parse("{\(members),\"k5\":\"again\",\"k99\":\"last\"}")
        #expect(value.objectValue?.count == 100)
        #expect(value["k5"] == "again")
        #expect(value["k99"] == "last")
        #expect(value.objectValue?[5].key == "k5")
    }

    @Test func keysAreComparedByBytesNotCanonicalEquivalence() throws {
        // "é" precomposed and decomposed are canonically equivalent Swift Strings but different JSON names.
        let value = try parse("{\"\u{E9}\":1,\"e\u{301}\":2}")
        #expect(value.objectValue?.count == 2)
        #expect(value["e\u{301}"] == .int(2))
        #expect(JSON.string("\u{E9}") != JSON.string("e\u{301}"))
    }

    @Test func escapesDecode() throws {
        let value = try parse(#""\"\\\/\b\f\n\r\t\u0041\u00e9\u65E5""#)
        #expect(value == .string("\"\\/\u{8}\u{C}\n\r\tAé日"))
    }

    @Test func surrogatePairEscapeDecodesToOneScalar() throws {
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""x\uD834\uDD1Ey""#) == .string("x𝄞y"))
    }

    @Test func escapedStringsReserializeWithMinimalEscapes() throws {
        #expect(try parse(#""\/\u0041\ud83d\ude00""#).serialized() == #""/A😀""#)
        #expect(try parse(#""\u0000""#).serialized() == #""\u0000""#)
    }

    @Test func deepestAllowedNestingParses() throws {
        let depth = JSON.maximumDepth
        let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(try parse(arrays).serialized() == arrays)
        let objects = String(repeating: #"{"a":"#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)
        #expect(try parse(objects).serialized() == objects)
    }

    @Test func nestingPastTheLimitIsRejected() {
        let depth = JSON.maximumDepth + 1
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let error = parseError(Array(text.utf8))
        #expect(error?.offset == JSON.maximumDepth)
        #expect(error?.message.contains("nesting") == true)
    }

    @Test func hostileNestingFailsWithoutExhaustingTheStack() {
        #expect(parseError(Array(repeating: UInt8(ascii: "["), count: 1_000_000)) != nil)
        #expect(parseError(Array(String(repeating: #"{"a":"#, count: 200_000).utf8)) != nil)
    }

    @Test(arguments: [
        ("", 0, "end of input"),
        (" ", 1, "end of input"),
        ("nul", 0, "literal"),
        ("True", 0, "unexpected character"),
        ("1 2", 2, "after the JSON value"),
        ("{} x", 3, "after the JSON value"),
        ("[1,]", 3, "unexpected character"),
        ("[1 2]", 3, "',' or ']'"),
        (#"{"a" 1}"#, 5, "':'"),
        ("{a:1}", 1, "string key"),
        (#"{"a":1,}"#, 7, "string key"),
        ("[1", 2, "end of input"),
        (#""abc"#, 0, "unterminated"),
        ("01", 0, "leading zero"),
        ("-01", 1, "leading zero"),
        ("00", 0, "leading zero"),
        ("-", 1, "digit"),
        ("1.", 2, "decimal point"),
        (".5", 0, "unexpected character"),
        ("+1", 0, "unexpected character"),
        ("1e", 2, "exponent"),
        ("1e+", 3, "exponent"),
        ("NaN", 0, "unexpected character"),
        (#""\x""#, 1, "escape"),
        (#""\u12""#, 3, "hex"),
        (#""\ud83d""#, 1, "lone high surrogate"),
        (#""\ud83dx""#, 1, "lone high surrogate"),
        (#""\ud83d\u0041""#, 1, "not followed by a low surrogate"),
        (#""\ude00""#, 1, "lone low surrogate"),
        ("\"a\tb\"", 2, "control character"),
        ("\"a\nb\"", 2, "control character"),
        ("\"\u{0}\"", 1, "control character"),
    ] as [(String, Int, String)])
    func rejectsMalformedText(text: String, offset: Int, phrase: String) {
        let error = parseError(Array(text.utf8))
        #expect(error?.offset == offset, "\(text)")
        #expect(error?.message.contains(phrase) == true, "\(text): \(String(describing: error))")
    }

    @Test(arguments: [
        [0x22, 0xFF, 0x22],                    // never valid in UTF-8
        [0x22, 0xC0, 0xAF, 0x22],              // overlong '/'
        [0x22, 0xE0, 0x80, 0xAF, 0x22],        // overlong, three bytes
        [0x22, 0xED, 0xA0, 0x80, 0x22],        // encoded surrogate U+D800
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
        [0x22, 0x80, 0x22],                    // lone continuation byte
        [0x22, 0xC3, 0x22],                    // truncated two-byte sequence
        [0x22, 0xE6, 0x97, 0x22],              // truncated three-byte sequence
        [0x22, 0xE6, 0x97],                    // truncated at end of input
        [0xEF, 0xBB, 0xBF, 0x31],              // byte order mark
        [0x5B, 0xC3, 0xA9, 0x5D],              // non-ASCII outside a string
    ] as [[UInt8]])
    func rejectsInvalidUTF8(bytes: [UInt8]) {
        let error = parseError(bytes)
        #expect(error != nil)
        #expect(error?.message.contains("UTF-8") == true, "\(String(describing: error))")
    }

    @Test func acceptsEveryUTF8Length() throws {
        let text = "\"a\u{E9}\u{65E5}\u{1F600}\u{10FFFF}\u{FFFD}\""
        #expect(try JSON.parse(Array(text.utf8)) == .string("a\u{E9}\u{65E5}\u{1F600}\u{10FFFF}\u{FFFD}"))
        let escaped = "\"\\n\u{65E5}\u{1F600}\""
        #expect(try JSON.parse(Array(escaped.utf8)) == .string("\n\u{65E5}\u{1F600}"))
    }

    @Test func parsesNonContiguousCollections() throws {
        let bytes = Array(#"{"a":[1,"x"]}"#.utf8)
        #expect(try JSON.parse(bytes.lazy.map { $0 }) == ["a": [1, "x"]])
        #expect(try JSON.parse(#"[true]"#.utf8) == [true])
    }
}

@Suite struct JSONValueTests {
    @Test(arguments: [
        ("0", 0), ("-0", 0), ("2419200", 2_419_200), ("-1", -1),
        ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min),
    ] as [(String, Int64)])
    func integerLexemesHaveInt64Values(lexeme: String, value: Int64) throws {
        #expect(try parse(lexeme).int64Value == value)
    }

    @Test(arguments: ["10.0", "1e3", "1E3", "0.5", "-0.0", "9223372036854775808", "-9223372036854775809"])
    func otherLexemesHaveNoInt64Value(lexeme: String) throws {
        #expect(try parse(lexeme).int64Value == nil)
    }

    @Test func numbersKeepTheirLexeme() throws {
        #expect(try parse("10.0") == .number("10.0"))
        #expect(try parse("10.0") != .int(10))
        #expect(try parse("1e3").doubleValue == 1000)
        #expect(try parse("-2.5E-1").doubleValue == -0.25)
        #expect(try parse("1e400").doubleValue == nil)
        #expect(JSON.string("1").int64Value == nil)
    }

    @Test func accessorsAnswerOnlyForTheirCase() {
        let value: JSON = ["s": "x", "b": true, "a": [1], "o": [:], "n": .null]
        #expect(value["s"]?.stringValue == "x")
        #expect(value["s"]?.boolValue == nil)
        #expect(value["b"]?.boolValue == true)
        #expect(value["a"]?.arrayValue == [.int(1)])
        #expect(value["o"]?.objectValue?.isEmpty == true)
        #expect(value["n"]?.isNull == true)
        #expect(value["missing"] == nil)
        #expect(JSON.array([])["s"] == nil)
    }

    @Test func buildersMakeValidNumbers() throws {
        #expect(JSON.int(-42).serialized() == "-42")
        #expect(JSON.int(UInt64.max).serialized() == "18446744073709551615")
        #expect(JSON.double(0.1).serialized() == "0.1")
        #expect(JSON.double(5).serialized() == "5.0")
        #expect(JSON.double(.infinity) == .null)
        for value in [1e20, 1e-7, -0.0, 123.456] {
            let text = JSON.double(value).serialized()
            #expect(try parse(text).doubleValue == value, "\(text)")
        }
        let literal: JSON = 2.5
        #expect(literal == .number("2.5"))
    }

    @Test func literalsBuildObjectsInOrder() {
        let value: JSON = ["to": "tok", "ttl": 60, "list": [1, "two", false], "a": "first", "a": "second"]
        #expect(value.serialized() == #"{"to":"tok","ttl":60,"list":[1,"two",false],"a":"second"}"#)
    }

    @Test func objectEqualityIsOrdered() {
        let first: JSON = ["a": 1, "b": 2]
        let second: JSON = ["b": 2, "a": 1]
        #expect(first != second)
        #expect(first == JSON(members: [("a", .int(1)), ("b", .int(2))]))
    }
}

@Suite struct JSONSerializationTests {
    @Test(arguments: [
        ("plain", #""plain""#),
        ("a\"b", #""a\"b""#),
        ("a\\b", #""a\\b""#),
        ("a/b", #""a/b""#),
        ("\n\r\t\u{8}\u{C}", #""\n\r\t\b\f""#),
        ("\u{0}\u{1}\u{1F}", #""\u0000\u0001\u001f""#),
        ("\u{7F}é😀\u{2028}", "\"\u{7F}é😀\u{2028}\""),
    ])
    func stringsEscapeOnlyWhatJSONRequires(value: String, expected: String) throws {
        #expect(JSON.string(value).serialized() == expected)
        #expect(try parse(expected) == .string(value))
    }

    @Test func appendAddsToExistingBytes() {
        var bytes = Array("x=".utf8)
        JSON.object([(key: "k", value: .array([.null, .bool(false)]))]).append(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"x={"k":[null,false]}"#)
    }

    @Test func stringVersionOfAppendJSONStringMatches() {
        var text = "->"
        appendJSONString("a\"\n\u{1}é", to: &text)
        #expect(text == #"->"a\"\n\u0001é""#)
    }
}
