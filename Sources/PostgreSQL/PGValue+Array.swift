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
    public static func array(_ values: [String?]) -> PGValue {
        let elements = values.map { value -> String in
            guard let value else { return "NULL" }
            var quoted = "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { quoted.unicodeScalars.append("\\") }
                quoted.unicodeScalars.append(character)
            }
            return quoted + "\""
        }
        return .text("{" + elements.joined(separator: ",") + "}")
    }

    /// `array(_:)` for a list without NULLs.
    public static func array(_ values: [String]) -> PGValue { array(values.map(Optional.some)) }
}
