/// Decodes HPACK header blocks (RFC 7541): one decoder per HTTP/2 connection, fed every header block the peer sends
/// in order (even those of streams no longer wanted), since each block may change the dynamic table.
///
/// ```swift
/// var decoder = HPACKDecoder(maxTableSize: 4096, maxHeaderListSize: 64 << 10)
/// try decoder.decode(block) { name, value in ... }  // e.g. ":status" "200"
/// ```
struct HPACKDecoder {
    private(set) var table: HPACKDynamicTable
    /// What SETTINGS_HEADER_TABLE_SIZE allows: a size update above it is refused.
    let maxTableSize: Int
    /// Name + value + 32 per field (RFC 9113 section 6.5.2), summed over a block.
    let maxHeaderListSize: Int
    /// Huffman-decoded literals land here before they are copied out at their exact size.
    private var scratch: [UInt8] = []

    init(maxTableSize: Int = 4096, maxHeaderListSize: Int = 64 << 10) {
        table = HPACKDynamicTable(maxSize: maxTableSize)
        self.maxTableSize = maxTableSize
        self.maxHeaderListSize = maxHeaderListSize
    }

    mutating func decode(_ block: [UInt8], _ emit: (_ name: [UInt8], _ value: [UInt8]) -> Void) throws(HPACKError) {
        // `withUnsafeBytes` rethrows untyped: the typed error travels in a Result.
        try block.withUnsafeBytes { bytes in Result { () throws(HPACKError) in try decode(bytes, emit) } }.get()
    }

    /// Calls `emit` with each field of `block` in order.
    mutating func decode(
        _ block: UnsafeRawBufferPointer, _ emit: (_ name: [UInt8], _ value: [UInt8]) -> Void
    ) throws(HPACKError) {
        var position = 0
        var listSize = 0
        var fieldsSeen = false
        while position < block.count {
            let first = block[position]
            if first & 0x80 != 0 {
                let index = try Self.integer(block, &position, prefixBits: 7)
                let (name, value) = try entry(index)
                try count(name, value, &listSize)
                emit(name, value)
                fieldsSeen = true
            } else if first & 0xE0 == 0x20 {
                // Only before the block's first field (section 4.2).
                guard !fieldsSeen else { throw .tableSizeUpdate("after a header field") }
                let size = try Self.integer(block, &position, prefixBits: 5)
                guard size <= maxTableSize else { throw .tableSizeUpdate("\(size) above \(maxTableSize)") }
                table.resize(to: size)
            } else {
                let indexing = first & 0xC0 == 0x40
                let index = try Self.integer(block, &position, prefixBits: indexing ? 6 : 4)
                let name = index == 0 ? try string(block, &position) : try entry(index).name
                let value = try string(block, &position)
                try count(name, value, &listSize)
                if indexing { table.add(name: name, value: value) }
                emit(name, value)
                fieldsSeen = true
            }
        }
    }

    private func count(_ name: [UInt8], _ value: [UInt8], _ listSize: inout Int) throws(HPACKError) {
        listSize += name.count + value.count + 32
        guard listSize <= maxHeaderListSize else { throw .headerListTooLarge }
    }

    private func entry(_ index: Int) throws(HPACKError) -> (name: [UInt8], value: [UInt8]) {
        if index >= 1 && index <= HPACKStaticTable.count { return HPACKStaticTable.entries[index - 1] }
        guard let entry = table.entry(index - HPACKStaticTable.count) else { throw .invalidIndex(index) }
        return entry
    }

    /// An integer with an N-bit prefix (section 5.1), at most 2^31 - 1 here (no HTTP/2 field needs more).
    static func integer(
        _ bytes: UnsafeRawBufferPointer, _ position: inout Int, prefixBits: Int
    ) throws(HPACKError) -> Int {
        guard position < bytes.count else { throw .truncated }
        let limit = (1 << prefixBits) - 1
        var value = Int(bytes[position]) & limit
        position += 1
        guard value == limit else { return value }
        var shift = 0
        while true {
            guard position < bytes.count else { throw .truncated }
            let byte = bytes[position]
            position += 1
            guard shift <= 28 else { throw .integerOverflow }
            value += Int(byte & 0x7F) << shift
            guard value <= Int(Int32.max) else { throw .integerOverflow }
            shift += 7
            if byte & 0x80 == 0 { return value }
        }
    }

    /// A string literal (section 5.2): raw, or Huffman-coded when its first bit is set.
    private mutating func string(_ bytes: UnsafeRawBufferPointer, _ position: inout Int) throws(HPACKError) -> [UInt8] {
        guard position < bytes.count else { throw .truncated }
        let huffman = bytes[position] & 0x80 != 0
        let length = try Self.integer(bytes, &position, prefixBits: 7)
        guard length <= bytes.count - position else { throw .truncated }
        let literal = UnsafeRawBufferPointer(rebasing: bytes[position..<(position + length)])
        position += length
        guard huffman else { return Array(literal) }
        scratch.removeAll(keepingCapacity: true)
        try HPACKHuffman.decode(literal, into: &scratch)
        return scratch
    }
}
