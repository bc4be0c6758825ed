import Foundation

/// What Herald needs to know about a libpq connection string without connecting: whether `--db` names PostgreSQL,
/// how to show it in a log line, and which secrets to keep out of messages.
///
/// libpq takes URIs (`postgresql://user:password@host:port/dbname?sslmode=require`) and keyword/value strings
/// (`host=… password=…`). Related PostgreSQL documentation:
/// https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING
public enum PGConnectionString {
    /// The mask that stands in for a password.
    public static let mask = "***"

    /// True for `postgres://…` and `postgresql://…`: what `--db`, the config file and `HERALD_DB` take for
    /// PostgreSQL (anything else is a SQLite path).
    public static func isPostgreSQL(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// `text` with every password replaced by `***`, for logs and error messages:
    /// `postgresql://herald:***@db:5432/herald`. Works on URIs (user info and a `password=` query parameter) and
    /// on keyword/value strings.
    public static func redacted(_ text: String) -> String {
        var result = ""
        var index = text.startIndex
        for range in passwordRanges(in: text) {
            result += text[index..<range.lowerBound]
            result += mask
            index = range.upperBound
        }
        result += text[index...]
        return result
    }

    /// The passwords in `text`, as written and percent-decoded, so a message that quotes one can be scrubbed.
    static func secrets(in text: String) -> [String] {
        var secrets: [String] = []
        for range in passwordRanges(in: text) where !range.isEmpty {
            let written = String(text[range])
            secrets.append(written)
            if let decoded = percentDecoded(written), decoded != written { secrets.append(decoded) }
        }
        return secrets
    }

    // MARK: - Finding passwords

    private static func passwordRanges(in text: String) -> [Range<String.Index>] {
        guard let schemeEnd = text.range(of: "://"), isPostgreSQL(text) else { return keywordPasswords(in: text) }
        var ranges: [Range<String.Index>] = []
        // Like libpq: the user info ends at the first '@', unless a '/' comes first (then there is none).
        let authority = text[schemeEnd.upperBound...]
        if let end = authority.firstIndex(where: { $0 == "@" || $0 == "/" }), authority[end] == "@",
            let colon = authority[..<end].firstIndex(of: ":")
        {
            ranges.append(authority.index(after: colon)..<end)
        }
        if let question = text.firstIndex(of: "?") {
            var start = text.index(after: question)
            while start < text.endIndex {
                let end = text[start...].firstIndex(of: "&") ?? text.endIndex
                let parameter = text[start..<end]
                if let equals = parameter.firstIndex(of: "="),
                    parameter[..<equals].lowercased() == "password"
                {
                    ranges.append(parameter.index(after: equals)..<end)
                }
                start = end < text.endIndex ? text.index(after: end) : end
            }
        }
        return ranges
    }

    /// `password = value` or `password='quoted \' value'` in a keyword/value string.
    private static func keywordPasswords(in text: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var index = text.startIndex
        while let found = text[index...].range(of: "password", options: .caseInsensitive) {
            index = found.upperBound
            // Only the keyword itself: at the start or after whitespace.
            if found.lowerBound > text.startIndex, !text[text.index(before: found.lowerBound)].isWhitespace {
                continue
            }
            var cursor = found.upperBound
            while cursor < text.endIndex, text[cursor] == " " { cursor = text.index(after: cursor) }
            guard cursor < text.endIndex, text[cursor] == "=" else { continue }
            cursor = text.index(after: cursor)
            while cursor < text.endIndex, text[cursor] == " " { cursor = text.index(after: cursor) }
            let start = cursor
            if cursor < text.endIndex, text[cursor] == "'" {
                cursor = text.index(after: cursor)
                while cursor < text.endIndex, text[cursor] != "'" {
                    if text[cursor] == "\\", text.index(after: cursor) < text.endIndex {
                        cursor = text.index(after: cursor)
                    }
                    cursor = text.index(after: cursor)
                }
                if cursor < text.endIndex { cursor = text.index(after: cursor) }
            } else {
                while cursor < text.endIndex, !text[cursor].isWhitespace { cursor = text.index(after: cursor) }
            }
            ranges.append(start..<cursor)
            index = cursor
        }
        return ranges
    }

    private static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
