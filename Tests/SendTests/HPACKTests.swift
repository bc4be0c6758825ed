import Testing

@testable import Send

/// HPACK (RFC 7541) against the examples of its Appendix C: each block decoded to its header list and dynamic
/// table, and the same lists encoded to the same bytes.
@Suite struct HPACKTests {
    typealias Field = (name: String, value: String)

    /// One block of an Appendix C sequence: the list, its encodings without and with Huffman, and the dynamic table
    /// after it (newest first) with its size.
    struct Step {
        var fields: [Field]
        var plain: String
        var huffman: String
        var table: [Field]
        var tableSize: Int
    }

    // MARK: - C.2: one representation each

    @Test func c2LiteralWithIndexingIsAddedToTheTable() throws {
        var decoder = HPACKDecoder()
        let fields = try decode("400a637573746f6d2d6b65790d637573746f6d2d686561646572", with: &decoder)
        #expect(same(fields, [("custom-key", "custom-header")]))
        #expect(same(table(decoder), [("custom-key", "custom-header")]))
        #expect(decoder.table.size == 55)
    }

    @Test func c2LiteralWithoutIndexingAndNeverIndexedLeaveTheTableEmpty() throws {
        var decoder = HPACKDecoder()
        #expect(same(try decode("040c2f73616d706c652f70617468", with: &decoder), [(":path", "/sample/path")]))
        #expect(same(try decode("100870617373776f726406736563726574", with: &decoder), [("password", "secret")]))
        #expect(decoder.table.count == 0)
        #expect(decoder.table.size == 0)
    }

    @Test func c2IndexedFromTheStaticTable() throws {
        var decoder = HPACKDecoder()
        #expect(same(try decode("82", with: &decoder), [(":method", "GET")]))
        #expect(decoder.table.count == 0)
    }

    // MARK: - C.3/C.4: requests, C.5/C.6: responses with evictions (table of 256 bytes)

    static let requests: [Step] = [
        Step(
            fields: [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
            plain: "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            huffman: "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            table: [(":authority", "www.example.com")], tableSize: 57),
        Step(
            fields: [
                (":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ],
            plain: "8286 84be 5808 6e6f 2d63 6163 6865",
            huffman: "8286 84be 5886 a8eb 1064 9cbf",
            table: [("cache-control", "no-cache"), (":authority", "www.example.com")], tableSize: 110),
        Step(
            fields: [
                (":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ],
            plain: "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
            huffman: "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
            table: [("custom-key", "custom-value"), ("cache-control", "no-cache"), (":authority", "www.example.com")],
            tableSize: 164),
    ]

    static let responses: [Step] = [
        Step(
            fields: [
                (":status", "302"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ],
            plain: """
                4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32
                3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d
                """,
            huffman: """
                4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad
                1718 63c7 8f0b 97c8 e9ae 82ae 43d3
                """,
            table: [
                ("location", "https://www.example.com"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("cache-control", "private"), (":status", "302"),
            ],
            tableSize: 222),
        Step(
            fields: [
                (":status", "307"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ],
            plain: "4803 3330 37c1 c0bf",
            huffman: "4883 640e ffc1 c0bf",
            table: [
                (":status", "307"), ("location", "https://www.example.com"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("cache-control", "private"),
            ],
            tableSize: 222),
        Step(
            fields: [
                (":status", "200"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"), ("content-encoding", "gzip"),
                ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
            ],
            plain: """
                88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970
                7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61
                6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31
                """,
            huffman: """
                88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2
                e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07
                """,
            table: [
                ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
                ("content-encoding", "gzip"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
            ],
            tableSize: 215),
    ]

    @Test(arguments: [("C.3 requests", false), ("C.4 requests, Huffman", true)])
    func requestSequence(_ name: String, huffman: Bool) throws {
        try play(Self.requests, tableSize: 4096, huffman: huffman)
    }

    @Test(arguments: [("C.5 responses", false), ("C.6 responses, Huffman", true)])
    func responseSequenceWithEvictions(_ name: String, huffman: Bool) throws {
        try play(Self.responses, tableSize: 256, huffman: huffman)
    }

    /// Decodes each step's bytes on one decoder and encodes its list on one encoder, checking both against the RFC.
    private func play(_ steps: [Step], tableSize: Int, huffman: Bool) throws {
        var decoder = HPACKDecoder(maxTableSize: tableSize)
        var encoder = HPACKEncoder(maxTableSize: tableSize, huffman: huffman)
        for step in steps {
            let hex = huffman ? step.huffman : step.plain
            #expect(same(try decode(hex, with: &decoder), step.fields))
            #expect(same(table(decoder), step.table))
            #expect(decoder.table.size == step.tableSize)

            var encoded: [UInt8] = []
            encoder.encode(step.fields.map { (Array($0.name.utf8), Array($0.value.utf8)) }, into: &encoded)
            #expect(encoded == bytes(hex))
            #expect(encoder.table.size == step.tableSize)
        }
    }

    // MARK: - Huffman

    @Test func huffmanRoundTripsEveryByte() throws {
        let all = (0...255).map { UInt8($0) }
        var encoded: [UInt8] = []
        HPACKHuffman.encode(all, into: &encoded)
        #expect(encoded.count == HPACKHuffman.encodedLength(all))
        #expect(try HPACKHuffman.decode(encoded) == all)
        #expect(try HPACKHuffman.decode([]) == [])
    }

    @Test func huffmanRefusesBadPaddingAndEOS() {
        // "a" is 00011: padded with ones it is 0x1f; with zeros, or with a further byte of ones, it is refused.
        #expect((try? HPACKHuffman.decode([0x1f])) == Array("a".utf8))
        #expect(throws: HPACKError.self) { try HPACKHuffman.decode([0x18]) }
        #expect(throws: HPACKError.self) { try HPACKHuffman.decode([0x1f, 0xff]) }
        // EOS (30 ones) inside a string.
        #expect(throws: HPACKError.self) { try HPACKHuffman.decode([0xff, 0xff, 0xff, 0xfc]) }
    }

    // MARK: - Malformed blocks

    @Test(arguments: [
        ("80", "index 0"), ("be", "index 62 with an empty dynamic table"),
        ("3fe21f", "size update to 4097, above 4096"),
        ("823f01", "size update after a field"), ("41", "literal without its value"), ("410f7777", "value cut short"),
        ("ff", "integer cut short"), ("ffffffffffff7f", "integer too large"), ("418103", "Huffman padding of zeros"),
    ])
    func malformedBlocksAreRefused(_ hex: String, _ what: String) {
        var decoder = HPACKDecoder()
        #expect(throws: HPACKError.self, "\(what)") { try decode(hex, with: &decoder) }
    }

    @Test func aSizeUpdateAtTheStartResizesAndEvicts() throws {
        var decoder = HPACKDecoder()
        _ = try decode("400a637573746f6d2d6b65790d637573746f6d2d686561646572", with: &decoder)
        #expect(try decode("20", with: &decoder).isEmpty)
        #expect(decoder.table.count == 0)
        #expect(decoder.table.maxSize == 0)
    }

    @Test func aHeaderListOverTheLimitIsRefused() {
        var decoder = HPACKDecoder(maxHeaderListSize: 60)
        // custom-key: custom-header counts 55; twice is 110.
        let block = "000a637573746f6d2d6b65790d637573746f6d2d686561646572"
        #expect((try? decode(block, with: &decoder))?.count == 1)
        #expect(throws: HPACKError.headerListTooLarge) { try decode(block + block, with: &decoder) }
    }

    // MARK: - Herald's request blocks

    @Test func aRequestBlockDecodesToItsFieldsWithTheCredentialNeverIndexed() throws {
        var block = HTTP2HeaderBlock()
        let target = try #require(HTTPSTarget("https://fcm.example.test:8443/v1/projects/p/messages:send"))
        let headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"), ("Authorization", "Bearer ya29.token"), ("Expect", ""),
            ("X-Extra", "1"),
        ]
        for length in [0, 9, 10, 12_345] {
            var bytes: [UInt8] = []
            block.write(target: target, headers: headers, bodyLength: length, into: &bytes)
            var decoder = HPACKDecoder()
            var fields: [Field] = []
            try decoder.decode(bytes) {
                fields.append((String(decoding: $0, as: UTF8.self), String(decoding: $1, as: UTF8.self)))
            }
            #expect(same(fields, [
                (":method", "POST"), (":scheme", "https"), (":authority", "fcm.example.test:8443"),
                (":path", "/v1/projects/p/messages:send"), ("content-type", "application/json"),
                ("authorization", "Bearer ya29.token"), ("x-extra", "1"), ("content-length", String(length)),
            ]))
            #expect(decoder.table.count == 0)
            // authorization (static name 23) as never indexed: 0001 1111, then 23 - 15.
            #expect(bytes.firstRange(of: [0x1f, 0x08]) != nil)
        }
    }

    // MARK: - Helpers

    private func decode(_ hex: String, with decoder: inout HPACKDecoder) throws -> [Field] {
        var fields: [Field] = []
        try decoder.decode(bytes(hex)) { name, value in
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        return fields
    }

    private func table(_ decoder: HPACKDecoder) -> [Field] {
        (0..<decoder.table.count).compactMap { decoder.table.entry($0 + 1) }.map {
            (String(decoding: $0.name, as: UTF8.self), String(decoding: $0.value, as: UTF8.self))
        }
    }

    private func same(_ lhs: [Field], _ rhs: [Field]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// The bytes of a hex dump; spaces and line breaks ignored.
func bytes(_ hex: String) -> [UInt8] {
    let digits = hex.unicodeScalars.compactMap { UInt8(String($0), radix: 16) }
    return stride(from: 0, to: digits.count - 1, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}
