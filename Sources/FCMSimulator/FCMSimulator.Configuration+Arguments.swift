extension FCMSimulator.Configuration {
    /// Why `herald fcm-sim` arguments were refused; `description` is the message for the user.
    public struct ArgumentError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    /// Reads `herald fcm-sim` flags (see `help`). `--listen` is accepted and ignored: the CLI binds the address.
    /// Flags take their value as the next argument or after `=` (`--seed=7`).
    ///
    /// ```swift
    /// let configuration = try Configuration.parse(arguments: ["--listen", "127.0.0.1:8700", "--fail-rate", "0.1"])
    /// configuration.failRate   // 0.1
    /// ```
    public static func parse(arguments: [String]) throws(ArgumentError) -> Self {
        var configuration = Self()
        var given: Set<String> = []
        var retryAfterSeconds: Int?
        var retryAfterAsDate = false
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else {
                throw ArgumentError("unexpected argument \"\(argument)\"; flags start with --")
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            guard let flag = Flag(rawValue: name) else {
                throw ArgumentError("unknown flag \(name); see herald fcm-sim --help")
            }
            guard flag == .alias || given.insert(name).inserted else { throw ArgumentError("\(name) given twice") }
            if flag == .retryAfterDate {
                guard inlineValue == nil else { throw ArgumentError("\(name) takes no value") }
                retryAfterAsDate = true
                continue
            }
            guard let value = inlineValue ?? remaining.popFirst() else {
                throw ArgumentError("\(name) needs a value")
            }
            switch flag {
            case .listen: break
            case .serverKey:
                guard !value.isEmpty else { throw ArgumentError("\(name) must not be empty") }
                configuration.serverKey = value
            case .failRate: configuration.failRate = try rate(name, value)
            case .failStatus:
                guard let status = Int(value), status == 429 || (500...599).contains(status) else {
                    throw ArgumentError("\(name) must be 429 or an HTTP status from 500 to 599, got \"\(value)\"")
                }
                configuration.failStatus = status
            case .retryAfter: retryAfterSeconds = try whole(name, value, upTo: 86_400)
            case .unauthorizedRate: configuration.unauthorizedRate = try rate(name, value)
            case .slowRate: configuration.slowRate = try rate(name, value)
            case .slowMilliseconds: configuration.slowMilliseconds = try whole(name, value, upTo: 600_000)
            case .dropRate: configuration.dropRate = try rate(name, value)
            case .alias:
                guard let equals = value.firstIndex(of: "="), equals != value.startIndex,
                      value.index(after: equals) != value.endIndex
                else {
                    throw ArgumentError("\(name) must be TOKEN=BEHAVIOUR, e.g. 42=notreg-42, got \"\(value)\"")
                }
                let token = String(value[..<equals])
                guard configuration.aliases[token] == nil else { throw ArgumentError("\(name) \(token) given twice") }
                configuration.aliases[token] = String(value[value.index(after: equals)...])
            case .seed:
                guard let seed = UInt64(value) else {
                    throw ArgumentError("\(name) must be a whole number from 0 to \(UInt64.max), got \"\(value)\"")
                }
                configuration.seed = seed
            case .retryAfterDate: break
            case .serviceAccount:
                do {
                    configuration.v1Account = try FCMSimulator.V1Account(serviceAccountFile: value)
                } catch {
                    throw ArgumentError("\(name): \(error)")
                }
            case .tokenLifetime: configuration.tokenLifetimeSeconds = max(1, try whole(name, value, upTo: 86_400))
            }
        }
        if retryAfterAsDate {
            configuration.retryAfter = .date(secondsFromNow: retryAfterSeconds ?? 1)
        } else if let retryAfterSeconds {
            configuration.retryAfter = .seconds(retryAfterSeconds)
        }
        return configuration
    }

    private enum Flag: String {
        case listen = "--listen"
        case serverKey = "--server-key"
        case failRate = "--fail-rate"
        case failStatus = "--fail-status"
        case retryAfter = "--retry-after"
        case retryAfterDate = "--retry-after-date"
        case unauthorizedRate = "--unauthorized-rate"
        case slowRate = "--slow-rate"
        case slowMilliseconds = "--slow-ms"
        case dropRate = "--drop-rate"
        case alias = "--alias"
        case seed = "--seed"
        case serviceAccount = "--service-account"
        case tokenLifetime = "--token-lifetime"
    }

    private static func rate(_ name: String, _ value: String) throws(ArgumentError) -> Double {
        guard let rate = Double(value), (0...1).contains(rate) else {
            throw ArgumentError("\(name) must be a fraction from 0 to 1 (0.05 is 5 %), got \"\(value)\"")
        }
        return rate
    }

    private static func whole(_ name: String, _ value: String, upTo limit: Int) throws(ArgumentError) -> Int {
        guard let number = Int(value), (0...limit).contains(number) else {
            throw ArgumentError("\(name) must be a whole number from 0 to \(limit), got \"\(value)\"")
        }
        return number
    }
}
