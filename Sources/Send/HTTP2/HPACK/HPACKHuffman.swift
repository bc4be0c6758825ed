/// HPACK's Huffman coding of string literals (RFC 7541 section 5.2, code table in Appendix B).
///
/// ```swift
/// var encoded: [UInt8] = []
/// HPACKHuffman.encode(Array("www.example.com".utf8), into: &encoded)  // f1e3 c2e5 f23a 6ba0 ab90 f4ff
/// let decoded = try HPACKHuffman.decode(encoded[...])                  // "www.example.com"
/// ```
enum HPACKHuffman {
    /// The bytes `bytes` take Huffman-coded.
    static func encodedLength(_ bytes: some Collection<UInt8>) -> Int {
        var bits = 0
        for byte in bytes { bits += Int(HPACKHuffmanTable.lengths[Int(byte)]) }
        return (bits + 7) / 8
    }

    /// Appends `bytes` Huffman-coded, the last byte padded with the most significant bits of EOS (all ones).
    static func encode(_ bytes: some Collection<UInt8>, into output: inout [UInt8]) {
        var pending: UInt64 = 0
        var pendingBits = 0
        for byte in bytes {
            let length = Int(HPACKHuffmanTable.lengths[Int(byte)])
            pending = pending << UInt64(length) | UInt64(HPACKHuffmanTable.codes[Int(byte)])
            pendingBits += length
            while pendingBits >= 8 {
                pendingBits -= 8
                output.append(UInt8(truncatingIfNeeded: pending >> UInt64(pendingBits)))
            }
        }
        if pendingBits > 0 {
            let padding = 8 - pendingBits
            output.append(UInt8(truncatingIfNeeded: pending << UInt64(padding) | (1 << UInt64(padding) - 1)))
        }
    }

    /// Decodes a Huffman-coded string literal. Refused (section 5.2): an EOS symbol inside the string, padding
    /// longer than 7 bits, or padding that is not the most significant bits of EOS.
    static func decode(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(HPACKError) {
        let tree = Self.tree
        var node = 0
        // Bits since the last complete symbol, and whether all of them were ones: what the padding must be.
        var depth = 0
        var allOnes = true
        for byte in bytes {
            var bit = 7
            while bit >= 0 {
                let one = (byte >> UInt8(bit)) & 1 == 1
                let next = tree[2 * node + (one ? 1 : 0)]
                depth += 1
                allOnes = allOnes && one
                if next < 0 {
                    let symbol = Int(-next - 1)
                    guard symbol < 256 else { throw .huffman("EOS in a string literal") }
                    output.append(UInt8(symbol))
                    node = 0
                    depth = 0
                    allOnes = true
                } else {
                    node = Int(next)
                }
                bit -= 1
            }
        }
        guard depth <= 7 else { throw .huffman("padding longer than 7 bits") }
        guard allOnes else { throw .huffman("padding is not EOS's prefix") }
    }

    static func decode(_ bytes: [UInt8]) throws(HPACKError) -> [UInt8] {
        var output: [UInt8] = []
        try bytes.withUnsafeBytes { raw in Result { () throws(HPACKError) in try decode(raw, into: &output) } }.get()
        return output
    }

    /// The code as a binary tree in one array: node n's children are at 2n (bit 0) and 2n + 1 (bit 1); a child
    /// >= 0 is another node, -1 - s is the leaf of symbol s. Every node of a complete prefix code has two children.
    private static let tree: [Int16] = {
        var tree = [Int16](repeating: 0, count: 2)
        var nodes = 1
        for symbol in 0...256 {
            let code = HPACKHuffmanTable.codes[symbol]
            let length = Int(HPACKHuffmanTable.lengths[symbol])
            var node = 0
            for position in stride(from: length - 1, through: 0, by: -1) {
                let slot = 2 * node + Int((code >> UInt32(position)) & 1)
                if position == 0 {
                    tree[slot] = Int16(-1 - symbol)
                } else {
                    if tree[slot] == 0 {
                        tree[slot] = Int16(nodes)
                        nodes += 1
                        tree.append(contentsOf: [0, 0])
                    }
                    node = Int(tree[slot])
                }
            }
        }
        return tree
    }()
}
