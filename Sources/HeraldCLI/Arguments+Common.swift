extension Arguments.Option {
    static let db = Arguments.Option(name: "db", takesValue: true)
    static let json = Arguments.Option(name: "json", takesValue: false)
    static let help = Arguments.Option(name: "help", takesValue: false)

    /// `--db`, `--json` and `--help`, which every maintenance command takes.
    static let common: [Arguments.Option] = [.db, .json, .help]

    static func value(_ name: String) -> Arguments.Option { Arguments.Option(name: name, takesValue: true) }
    static func flag(_ name: String) -> Arguments.Option { Arguments.Option(name: name, takesValue: false) }
}

extension Arguments {
    /// The integer value of option `name`, checked against `range`; `fallback` when it is absent.
    func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = value(name) else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(description: "--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    /// Fails unless there are exactly `count` positional arguments; `what` names them for the message.
    func expectPositional(_ count: Int, _ what: String) throws {
        guard positional.count == count else {
            if positional.count > count {
                throw UsageError(description: "unexpected argument \(positional[count])")
            }
            throw UsageError(description: "give \(what)")
        }
    }
}

/// A command with subcommands (`dead list`, `tokens add`, ...): picks the subcommand by its first argument.
struct Subcommands {
    var command: String
    var help: String
    var subcommands: [(name: String, run: ([String]) throws -> Int32)]

    func run(_ arguments: [String]) throws -> Int32 {
        let names = subcommands.map(\.name).joined(separator: ", ")
        guard let name = arguments.first, !name.hasPrefix("-") else {
            if arguments.first == "--help" || arguments.first == "-h" {
                print(help)
                return 0
            }
            throw Arguments.UsageError(description: "give a subcommand: \(names)")
        }
        guard let subcommand = subcommands.first(where: { $0.name == name }) else {
            throw Arguments.UsageError(description: "unknown subcommand \"\(name)\"; one of \(names)")
        }
        return try subcommand.run(Array(arguments.dropFirst()))
    }
}
