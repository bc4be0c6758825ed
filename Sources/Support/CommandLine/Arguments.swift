/// A command line split into options and positional arguments, checked against what a command accepts.
/// `--name value`, `--name=value` and boolean `--flag` are understood; `--` ends the options. In `Support` because a
/// provider's own `herald` commands (`webpush-keys`) parse their options as the others do.
public struct Arguments {
    /// A usage mistake: the command prints it with a hint and exits 2.
    public struct UsageError: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) {
            self.description = description
        }
    }

    public struct Option: Sendable {
        public var name: String
        public var takesValue: Bool

        public init(name: String, takesValue: Bool) {
            (self.name, self.takesValue) = (name, takesValue)
        }
    }

    public private(set) var values: [String: String] = [:]
    public private(set) var flags: Set<String> = []
    public private(set) var positional: [String] = []

    public init(_ arguments: [String], options: [Option]) throws {
        var index = 0
        var onlyPositional = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard !onlyPositional, argument.hasPrefix("--"), argument.count > 2 else {
                if argument == "--" && !onlyPositional { onlyPositional = true } else { positional.append(argument) }
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw UsageError(description: "unknown option --\(name)")
            }
            if option.takesValue {
                if let inlineValue {
                    values[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError(description: "--\(name) needs a value") }
                    values[name] = arguments[index]
                    index += 1
                }
            } else {
                guard inlineValue == nil else { throw UsageError(description: "--\(name) takes no value") }
                flags.insert(name)
            }
        }
    }

    public func value(_ name: String) -> String? { values[name] }
    public func flag(_ name: String) -> Bool { flags.contains(name) }
}

extension Arguments.Option {
    public static let db = Arguments.Option(name: "db", takesValue: true)
    public static let json = Arguments.Option(name: "json", takesValue: false)
    public static let help = Arguments.Option(name: "help", takesValue: false)

    /// `--db`, `--json` and `--help`, which every maintenance command takes.
    public static let common: [Arguments.Option] = [.db, .json, .help]

    public static func value(_ name: String) -> Arguments.Option { Arguments.Option(name: name, takesValue: true) }
    public static func flag(_ name: String) -> Arguments.Option { Arguments.Option(name: name, takesValue: false) }
}

extension Arguments {
    /// Fails unless there are exactly `count` positional arguments; `what` names them for the message.
    public func expectPositional(_ count: Int, _ what: String) throws {
        guard positional.count == count else {
            if positional.count > count {
                throw UsageError(description: "unexpected argument \(positional[count])")
            }
            throw UsageError(description: "give \(what)")
        }
    }

    /// The arguments of a command that makes a key or a secret (`secrets-key`, `webhook-secret`, `webpush-keys`):
    /// `--out FILE`, `--json` and `--help`, no positional argument. nil when `--help` was asked for (`help` printed).
    public static func keyMaking(_ arguments: [String], help: String) throws -> Arguments? {
        let parsed = try Arguments(arguments, options: [.value("out"), .json, .help])
        if parsed.flag("help") {
            print(help)
            return nil
        }
        try parsed.expectPositional(0, "no arguments")
        return parsed
    }
}

/// A failure a command reports with exit code 1.
public struct CommandError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
