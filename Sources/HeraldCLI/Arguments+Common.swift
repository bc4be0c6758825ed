import Support

extension Arguments {
    /// The integer value of option `name`, checked against `range`; `fallback` when it is absent.
    func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = value(name) else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(description: "--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return number
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
