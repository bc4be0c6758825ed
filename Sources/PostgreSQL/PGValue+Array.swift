extension PGValue {
    /// A `bigint[]` (or any integer array) parameter in PostgreSQL's array literal form, `{1,2,3}`; cast it in the
    /// statement (`$1::bigint[]`), so one prepared statement takes any number of values.
    public static func array(_ values: [Int64]) -> PGValue {
        .text("{" + values.map(String.init).joined(separator: ",") + "}")
    }

    /// `array(_:)` with NULL elements, e.g. an `int[]` of optional HTTP statuses.
    public static func array(_ values: [Int64?]) -> PGValue {
        .text("{" + values.map { $0.map(String.init) ?? "NULL" }.joined(separator: ",") + "}")
    }

    /// A `text[]` parameter (`$1::text[]`): each element double-quoted with `"` and `\` escaped, so commas,
    /// braces, spaces and the word NULL inside a value stay text; nil is SQL NULL.
    ///
    /// Built in UTF-8 bytes: an outcome batch's message ids go through here for every answer FCM gives.
    public static func array(_ values: [String?]) -> PGValue {
        let (quote, backslash) = (UInt8(ascii: "\""), UInt8(ascii: "\\"))
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(2 + values.reduce(0) { $0 + ($1?.utf8.count ?? 4) + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let value else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(quote)
            for byte in value.utf8 {
                if byte == quote || byte == backslash { bytes.append(backslash) }
                bytes.append(byte)
            }
            bytes.append(quote)
        }
        bytes.append(UInt8(ascii: "}"))
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    /// `array(_:)` for a list without NULLs.
    public static func array(_ values: [String]) -> PGValue { array(values.map(Optional.some)) }
}
