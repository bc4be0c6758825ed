/// A header block HPACK cannot decode: a COMPRESSION_ERROR for the whole HTTP/2 connection (RFC 9113 section 4.3),
/// as the decoder's table may no longer match the encoder's.
enum HPACKError: Error, Equatable, CustomStringConvertible {
    case truncated
    case integerOverflow
    case invalidIndex(Int)
    case huffman(String)
    /// A dynamic table size update above the limit, or one not at the start of a block.
    case tableSizeUpdate(String)
    /// The decoded header list is larger than the limit set for it.
    case headerListTooLarge

    var description: String {
        switch self {
        case .truncated: "HPACK: truncated header block"
        case .integerOverflow: "HPACK: integer too large"
        case .invalidIndex(let index): "HPACK: no table entry \(index)"
        case .huffman(let reason): "HPACK: bad Huffman string (\(reason))"
        case .tableSizeUpdate(let reason): "HPACK: bad table size update (\(reason))"
        case .headerListTooLarge: "HPACK: header list too large"
        }
    }
}
