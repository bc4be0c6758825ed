import Testing

@testable import Ingest

@Suite struct FormBodyTests {
    private func fields(_ text: String) throws -> [String] {
        try FormBody.parse(Array(text.utf8)).fields.map { "\($0.name)=\($0.value)" }
    }

    @Test func fcmsOwnExampleReadsAsWritten() throws {
        let text = "collapse_key=score_update&time_to_live=108&delay_while_idle=1&data.score=4x8"
            + "&data.time=15:16.2342&registration_id=42"
        #expect(try fields(text) == [
            "collapse_key=score_update", "time_to_live=108", "delay_while_idle=1", "data.score=4x8",
            "data.time=15:16.2342", "registration_id=42",
        ])
    }

    @Test func plusIsASpaceAndPercentEscapesAreBytes() throws {
        #expect(try fields("data.note=a+b%21%2B%3D%26&data.%C3%A9t%C3%A9=%E2%82%AC") == [
            "data.note=a b!+=&", "data.été=€",
        ])
    }

    @Test func hexDigitsMayBeEitherCase() throws {
        #expect(try fields("a=%2f%2F") == ["a=//"])
    }

    @Test func repeatsKeepTheirOrderAndEmptySegmentsAreSkipped() throws {
        #expect(try fields("a=1&&b=2&a=3&") == ["a=1", "b=2", "a=3"])
    }

    @Test func aFieldWithoutEqualsHasTheEmptyValueAndOnlyTheFirstEqualsSplits() throws {
        #expect(try fields("flag&x=a=b&=v") == ["flag=", "x=a=b", "=v"])
    }

    @Test func anEmptyBodyHasNoFields() throws {
        #expect(try fields("").isEmpty)
    }

    @Test(arguments: ["a=%", "a=%4", "a=%G0", "a=%4G", "%zz=1"])
    func aBrokenPercentEscapeIsMalformed(text: String) {
        #expect(throws: FormBody.Malformed.self) { try FormBody.parse(Array(text.utf8)) }
    }

    @Test func bytesThatAreNotUTF8AreMalformedAndTheMessageDoesNotQuoteThem() {
        #expect(throws: FormBody.Malformed(message: "field 2 is not UTF-8 once percent-decoded")) {
            try FormBody.parse(Array("a=1&b=%C3%28".utf8))
        }
        #expect(throws: FormBody.Malformed.self) { try FormBody.parse([UInt8(ascii: "a"), UInt8(ascii: "="), 0xFF]) }
    }
}
