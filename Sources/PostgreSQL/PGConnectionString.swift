import CLibPQ

/// What Herald needs to know about a libpq connection string without connecting: whether `--db` names PostgreSQL,
/// how to show it in a log line, and which secrets to keep out of messages — all from libpq's own reading of it
/// (`PQconninfoParse`), so a password is found wherever libpq finds one, whatever its characters.
///
/// libpq takes URIs (`postgresql://user:password@host:port/dbname?sslmode=require`) and keyword/value strings
/// (`host=… password=…`). Related PostgreSQL documentation:
/// https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING
public enum PGConnectionString {
    /// The mask that stands in for a password.
    public static let mask = "***"

    /// True for `postgres://…` and `postgresql://…` URIs and for keyword/value strings, which start with a libpq
    /// keyword and `=` (`host=db dbname=herald`); anything else (`./host=x` included) is a SQLite path.
    public static func isPostgreSQL(_ text: String) -> Bool {
        isURI(text) || startsWithKeyword(text)
    }

    /// What a log line or a message may show of `text`: the options libpq reads from it in keyword/value form,
    /// `password=***` (and every other option libpq marks secret) masked, any secret's value masked wherever else it
    /// shows; or, when libpq cannot read it, a sentence that quotes none of it.
    ///
    ///     redacted("postgresql://herald:s3cret@db/herald")  // user=herald password=*** dbname=herald host=db
    public static func redacted(_ text: String) -> String {
        switch read(text) {
        case .unreadable:
            return "a PostgreSQL connection string that libpq cannot read"
        case .options(let options):
            let shown = options.map { option in
                "\(option.keyword)=\(option.isSecret ? mask : quoted(option.value))"
            }
            return scrub(shown.joined(separator: " "), secrets: secrets(of: options))
        }
    }

    /// Why connecting to `text` is not even tried, in words that quote no secret: libpq cannot read it, or would read
    /// part of a password as something else. Nil when libpq reads it as written.
    public static func problem(in text: String) -> String? {
        guard case .unreadable(let why) = read(text) else { return nil }
        return why
    }

    /// The values of the options libpq marks secret (`password`, `sslpassword`), as libpq will use them: what must
    /// never show in a message.
    public static func secrets(in text: String) -> [String] {
        guard case .options(let options) = read(text) else { return [] }
        return secrets(of: options)
    }

    /// `message` with every secret replaced by the mask.
    static func scrub(_ message: String, secrets: [String]) -> String {
        secrets.reduce(message) { $0.replacingOccurrences(of: $1, with: mask) }
    }

    // MARK: - Reading as libpq reads

    private struct Option {
        var keyword: String
        var value: String
        var isSecret: Bool
    }

    private enum Reading {
        case options([Option])
        case unreadable(String)
    }

    private static func read(_ text: String) -> Reading {
        if isURI(text), let stray = strayAt(in: text) { return .unreadable(stray) }
        var error: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(text, &error) else {
            let message = error.map { String(cString: $0) } ?? "out of memory"
            if let error { PQfreemem(error) }
            return .unreadable("libpq cannot read it: " + maskingQuotes(message.trimmingTrailingNewlines, in: text))
        }
        defer { PQconninfoFree(parsed) }
        var options: [Option] = []
        var entry = parsed
        while let keyword = entry.pointee.keyword {
            // "D": options for debugging that libpq itself leaves out of what it shows.
            if let value = entry.pointee.val, entry.pointee.dispchar.pointee != CChar(UInt8(ascii: "D")) {
                options.append(Option(
                    keyword: String(cString: keyword), value: String(cString: value),
                    isSecret: entry.pointee.dispchar.pointee == CChar(UInt8(ascii: "*"))))
            }
            entry += 1
        }
        return .options(options)
    }

    private static func secrets(of options: [Option]) -> [String] {
        options.filter { $0.isSecret && !$0.value.isEmpty }.map(\.value)
    }

    /// libpq ends a URI's user and password at the first `@` (or at a `/`, and then there are none), so a password
    /// holding `@` or `/` as written would be read partly as the host, the port or the database — and shown as one.
    /// Any `@` but the one that ends the user information is refused; written as `%40` it is read as meant.
    private static func strayAt(in text: String) -> String? {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let rest = text[schemeEnd.upperBound...]
        let userInfoEnds = rest.first(where: { $0 == "@" || $0 == "/" }) == "@"
        guard rest.count(where: { $0 == "@" }) > (userInfoEnds ? 1 : 0) else { return nil }
        return "libpq would read part of its user name or password as the host or the database: in a URL, write "
            + "@ as %40 and / as %2F inside them (or use the keyword/value form, password='…')"
    }

    /// libpq's message about a string it cannot read quotes the part it stumbled on, which may be a piece of a
    /// password: every quoted part is masked when the string could hold one.
    private static func maskingQuotes(_ message: String, in text: String) -> String {
        guard text.lowercased().contains("password") || (isURI(text) && text.contains("@")) else { return message }
        var result = ""
        var inQuote = false
        for character in message {
            if character == "\"" {
                if inQuote { result += mask }
                inQuote.toggle()
                result.append(character)
            } else if !inQuote {
                result.append(character)
            }
        }
        return result
    }

    // MARK: - Which strings are PostgreSQL's

    private static func isURI(_ text: String) -> Bool {
        let lowered = text.prefix(16).lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// Leading blanks, a libpq keyword, blanks, `=`: how libpq's keyword/value form begins.
    private static func startsWithKeyword(_ text: String) -> Bool {
        let start = text.drop(while: \.isWhitespace)
        let keyword = start.prefix(while: { ("a"..."z").contains($0) || $0 == "_" })
        return start.dropFirst(keyword.count).drop(while: \.isWhitespace).first == "="
            && keywords.contains(String(keyword))
    }

    /// Every option libpq knows (`PQconninfoParse("")` lists them all, none set).
    private static let keywords: Set<String> = {
        var keywords: Set<String> = []
        guard let options = PQconninfoParse("", nil) else { return keywords }
        defer { PQconninfoFree(options) }
        var entry = options
        while let keyword = entry.pointee.keyword {
            keywords.insert(String(cString: keyword))
            entry += 1
        }
        return keywords
    }()

    /// A value as the keyword/value form writes it: in single quotes, with `\` before `'` and `\`, when it is empty or
    /// holds a blank, a quote or a backslash.
    private static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0.isWhitespace || $0 == "'" || $0 == "\\" }) else {
            return value
        }
        var result = "'"
        for character in value {
            if character == "'" || character == "\\" { result.append("\\") }
            result.append(character)
        }
        return result + "'"
    }
}
