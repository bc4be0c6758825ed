/// A command line split into options and positional arguments, checked against what a command accepts.
/// `--name value`, `--name=value` and boolean `--flag` are understood; `--` ends the options.
struct Arguments {
    /// A usage mistake: the command prints it with a hint and exits 2.
    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    struct Option {
        var name: String
        var takesValue: Bool
    }

    private(set) var values: [String: String] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positional: [String] = []

    init(_ arguments: [String], options: [Option]) throws {
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

    func value(_ name: String) -> String? { values[name] }
    func flag(_ name: String) -> Bool { flags.contains(name) }
}
