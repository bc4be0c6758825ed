/// FCM's topic condition grammar: `'a' in topics && ('b' in topics || 'c' in topics)`.
///
/// A condition is quoted topic names (single or double quotes) each followed by `in topics`, joined by `&&` and
/// `||`, grouped with parentheses, with at most two operators. Checking the whole grammar at ingest, rather than
/// only counting operators, keeps a condition FCM would refuse from being stored and sent.
enum TopicCondition {
    static let maximumOperators = 2
    /// FCM HTTP v1 takes up to five topics in a condition.
    static let maximumV1Operators = 4
    /// Far deeper than three terms need; a bound so hostile input cannot exhaust the stack.
    private static let maximumParenthesisDepth = 8

    /// Why `condition` is not a valid condition, or nil when it is.
    static func problem(in condition: String, maximumOperators: Int = maximumOperators) -> String? {
        let tokens: [Token]
        switch tokenize(Array(condition.utf8)) {
        case .success(let result): tokens = result
        case .failure(let problem): return problem.reason
        }
        let operators = tokens.count(where: { $0 == .and || $0 == .or })
        if operators > maximumOperators {
            return "condition has \(operators) operators (&&, ||); at most \(maximumOperators) are allowed"
        }
        var parser = Parser(tokens: tokens)
        if let reason = parser.parseExpression(depth: 0) { return reason }
        if parser.position < tokens.count { return "condition has an unexpected \(tokens[parser.position])" }
        return nil
    }

    /// Whether `name` may follow `/topics/` or sit in quotes in a condition: `[a-zA-Z0-9-_.~%]+`.
    static func isTopicName(_ name: some Collection<UInt8>) -> Bool {
        !name.isEmpty && name.allSatisfy(isTopicNameByte)
    }

    private static func isTopicNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"):
            true
        default:
            false
        }
    }

    // MARK: - Tokens

    private enum Token: Equatable, CustomStringConvertible {
        case open, close, and, or, name, inKeyword, topicsKeyword

        var description: String {
            switch self {
            case .open: "'('"
            case .close: "')'"
            case .and: "'&&'"
            case .or: "'||'"
            case .name: "topic name"
            case .inKeyword: "'in'"
            case .topicsKeyword: "'topics'"
            }
        }
    }

    private struct Problem: Error {
        var reason: String
    }

    private static func tokenize(_ text: [UInt8]) -> Result<[Token], Problem> {
        var tokens: [Token] = []
        var index = 0
        func word(at start: Int) -> ArraySlice<UInt8> {
            var end = start
            while end < text.count, (text[end] | 0x20) >= UInt8(ascii: "a"), (text[end] | 0x20) <= UInt8(ascii: "z") {
                end += 1
            }
            return text[start..<end]
        }
        while index < text.count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                index += 1
            case UInt8(ascii: "("):
                tokens.append(.open)
                index += 1
            case UInt8(ascii: ")"):
                tokens.append(.close)
                index += 1
            case UInt8(ascii: "&"), UInt8(ascii: "|"):
                guard index + 1 < text.count, text[index + 1] == byte else {
                    return .failure(Problem(reason: "condition operators are && and ||"))
                }
                tokens.append(byte == UInt8(ascii: "&") ? .and : .or)
                index += 2
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                guard let closing = text[(index + 1)...].firstIndex(of: byte) else {
                    return .failure(Problem(reason: "condition has an unterminated topic name"))
                }
                guard isTopicName(text[(index + 1)..<closing]) else {
                    return .failure(Problem(reason: "condition topic names must be 1 or more of [a-zA-Z0-9-_.~%]"))
                }
                tokens.append(.name)
                index = closing + 1
            default:
                let letters = word(at: index)
                if letters.elementsEqual("in".utf8) {
                    tokens.append(.inKeyword)
                } else if letters.elementsEqual("topics".utf8) {
                    tokens.append(.topicsKeyword)
                } else {
                    return .failure(Problem(reason: "condition must be quoted topic names each followed by "
                        + "'in topics', joined by && or ||"))
                }
                index = letters.endIndex
            }
        }
        return .success(tokens)
    }

    // MARK: - Grammar

    /// expression := term (('&&' | '||') term)*
    /// term := '(' expression ')' | name 'in' 'topics'
    private struct Parser {
        let tokens: [Token]
        var position = 0

        mutating func parseExpression(depth: Int) -> String? {
            if let reason = parseTerm(depth: depth) { return reason }
            while position < tokens.count, tokens[position] == .and || tokens[position] == .or {
                position += 1
                if let reason = parseTerm(depth: depth) { return reason }
            }
            return nil
        }

        private mutating func parseTerm(depth: Int) -> String? {
            guard position < tokens.count else { return "condition ends where a topic test was expected" }
            if tokens[position] == .open {
                guard depth < maximumParenthesisDepth else { return "condition nests parentheses too deeply" }
                position += 1
                if let reason = parseExpression(depth: depth + 1) { return reason }
                guard position < tokens.count, tokens[position] == .close else {
                    return "condition has an unclosed '('"
                }
                position += 1
                return nil
            }
            for expected in [Token.name, .inKeyword, .topicsKeyword] {
                guard position < tokens.count else { return "condition ends inside a topic test" }
                guard tokens[position] == expected else {
                    return "condition has \(tokens[position]) where \(expected) was expected "
                        + "(write 'name' in topics)"
                }
                position += 1
            }
            return nil
        }
    }
}
