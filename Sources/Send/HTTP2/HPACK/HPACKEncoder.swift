/// Encodes HPACK header blocks (RFC 7541).
///
/// Herald's requests use the static functions: each field as an index into the static table, or a literal that is
/// never added to a dynamic table, so a request's block can be built once and sent on any connection. The instance
/// (with a dynamic table, adding every literal it sends) exists to check the encoding against RFC 7541's
/// Appendix C examples, which use one.
struct HPACKEncoder {
    private(set) var table: HPACKDynamicTable
    /// Huffman-code string literals when that is shorter.
    var huffman: Bool

    init(maxTableSize: Int = 4096, huffman: Bool = true) {
        table = HPACKDynamicTable(maxSize: maxTableSize)
        self.huffman = huffman
    }

    /// Appends `fields` as a block: an exact match in either table is indexed, anything else is a literal with
    /// incremental indexing, naming its name by index when a table has it (the static table first).
    mutating func encode(_ fields: [(name: [UInt8], value: [UInt8])], into output: inout [UInt8]) {
        for (name, value) in fields {
            let fixed = HPACKStaticTable.find(name: name, value: value)
            if fixed.fullIndex > 0 {
                Self.integer(fixed.fullIndex, prefixBits: 7, flags: 0x80, into: &output)
                continue
            }
            let dynamic = table.find(name: name, value: value)
            if dynamic.fullIndex > 0 {
                Self.integer(HPACKStaticTable.count + dynamic.fullIndex, prefixBits: 7, flags: 0x80, into: &output)
                continue
            }
            let nameIndex = fixed.nameIndex > 0
                ? fixed.nameIndex : dynamic.nameIndex > 0 ? HPACKStaticTable.count + dynamic.nameIndex : 0
            Self.integer(nameIndex, prefixBits: 6, flags: 0x40, into: &output)
            if nameIndex == 0 { Self.string(name, huffman: huffman, into: &output) }
            Self.string(value, huffman: huffman, into: &output)
            table.add(name: name, value: value)
        }
    }

    // MARK: - Representations without a dynamic table

    /// A field from the static table, name and value.
    static func indexed(_ index: Int, into output: inout [UInt8]) {
        integer(index, prefixBits: 7, flags: 0x80, into: &output)
    }

    /// A literal that no table keeps (section 6.2.2), or, `sensitive`, that no intermediary may ever index
    /// (section 6.2.3: for credentials). Its name by static index when it has one.
    static func literal(
        name: [UInt8], value: some Collection<UInt8>, sensitive: Bool = false, huffman: Bool = true,
        into output: inout [UInt8]
    ) {
        let nameIndex = HPACKStaticTable.find(name: name, value: []).nameIndex
        integer(nameIndex, prefixBits: 4, flags: sensitive ? 0x10 : 0x00, into: &output)
        if nameIndex == 0 { string(name, huffman: huffman, into: &output) }
        string(value, huffman: huffman, into: &output)
    }

    /// Sets the dynamic table's size (section 6.3); at the start of a block.
    static func tableSizeUpdate(_ size: Int, into output: inout [UInt8]) {
        integer(size, prefixBits: 5, flags: 0x20, into: &output)
    }

    /// An integer with an N-bit prefix (section 5.1), `flags` in the prefix byte's high bits.
    static func integer(_ value: Int, prefixBits: Int, flags: UInt8, into output: inout [UInt8]) {
        let limit = (1 << prefixBits) - 1
        guard value >= limit else {
            output.append(flags | UInt8(value))
            return
        }
        output.append(flags | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            output.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        output.append(UInt8(rest))
    }

    /// A string literal (section 5.2), Huffman-coded when asked and no longer (as the RFC's examples do).
    static func string(_ bytes: some Collection<UInt8>, huffman: Bool, into output: inout [UInt8]) {
        let coded = huffman ? HPACKHuffman.encodedLength(bytes) : Int.max
        if coded <= bytes.count {
            integer(coded, prefixBits: 7, flags: 0x80, into: &output)
            HPACKHuffman.encode(bytes, into: &output)
        } else {
            integer(bytes.count, prefixBits: 7, flags: 0x00, into: &output)
            output.append(contentsOf: bytes)
        }
    }
}
