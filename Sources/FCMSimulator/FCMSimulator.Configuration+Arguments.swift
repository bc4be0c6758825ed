import Foundation
import HTTP

extension FCMSimulator.Configuration {
    /// Why `herald fcm-sim` arguments were refused; `description` is the message for the user.
    public struct ArgumentError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    /// Reads `herald fcm-sim` flags (see `FCMSimulator.help(sides:)`): the shell's into a configuration, and the
    /// values of the sides' own flags (`SimulatorHelp.flags`) by name, for `SimulatorSide.init(flags:)`. `--listen`
    /// is accepted and ignored: the CLI binds the address. The TLS flags make `tls`, whose files are read when it is
    /// served (`FCMSimulator.serveTLS`). Flags take their value as the next argument or after `=` (`--seed=7`).
    ///
    /// ```swift
    /// let (configuration, _) = try Configuration.parse(
    ///     arguments: ["--listen", "127.0.0.1:8700", "--fail-rate", "0.1"], sideFlags: [])
    /// configuration.failRate   // 0.1
    /// ```
    public static func parse(
        arguments: [String], sideFlags: Set<String>
    ) throws(ArgumentError) -> (configuration: Self, sideValues: [String: String]) {
        var configuration = Self()
        var given: Set<String> = []
        var retryAfterSeconds: Int?
        var retryAfterAsDate = false
        var tlsValues: [Flag: String] = [:]
        var sideValues: [String: String] = [:]
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
                guard sideFlags.contains(name) else {
                    throw ArgumentError("unknown flag \(name); see herald fcm-sim --help")
                }
                guard sideValues[name] == nil else { throw ArgumentError("\(name) given twice") }
                guard let value = inlineValue ?? remaining.popFirst() else {
                    throw ArgumentError("\(name) needs a value")
                }
                sideValues[name] = value
                continue
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
            case .tlsListen, .tlsCertificate, .tlsKey, .tlsCertificateOut, .maxConcurrentStreams:
                guard !value.isEmpty else { throw ArgumentError("\(name) must not be empty") }
                tlsValues[flag] = value
            }
        }
        configuration.tls = try tlsListener(tlsValues)
        if retryAfterAsDate {
            configuration.retryAfter = .date(secondsFromNow: retryAfterSeconds ?? 1)
        } else if let retryAfterSeconds {
            configuration.retryAfter = .seconds(retryAfterSeconds)
        }
        return (configuration, sideValues)
    }

    private enum Flag: String {
        case listen = "--listen"
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
        case tlsListen = "--tls-listen"
        case tlsCertificate = "--tls-cert"
        case tlsKey = "--tls-key"
        case tlsCertificateOut = "--tls-cert-out"
        case maxConcurrentStreams = "--max-concurrent-streams"
    }

    /// The HTTPS listener from its flags: `--tls-listen HOST:PORT` turns it on, the others need it, and a
    /// certificate comes with its key.
    private static func tlsListener(_ values: [Flag: String]) throws(ArgumentError) -> FCMSimulator.TLSListener? {
        guard let listen = values[.tlsListen] else {
            if let flag = [Flag.tlsCertificate, .tlsKey, .tlsCertificateOut, .maxConcurrentStreams]
                .first(where: { values[$0] != nil }) {
                throw ArgumentError("\(flag.rawValue) needs --tls-listen HOST:PORT (the HTTPS listener it is for)")
            }
            return nil
        }
        let address: ListenAddress
        do {
            address = try ListenAddress.parse(listen)
        } catch {
            throw ArgumentError("--tls-listen: \(error.message)")
        }
        guard case .tcp = address else {
            throw ArgumentError("--tls-listen must be HOST:PORT (TLS is served on TCP only), got \"\(listen)\"")
        }
        switch (values[.tlsCertificate], values[.tlsKey]) {
        case (_?, nil): throw ArgumentError("--tls-cert needs --tls-key (the certificate's private key)")
        case (nil, _?): throw ArgumentError("--tls-key needs --tls-cert (the key's certificate)")
        default: break
        }
        var listener = FCMSimulator.TLSListener(
            address: address, certificateFile: values[.tlsCertificate], keyFile: values[.tlsKey],
            certificateOut: values[.tlsCertificateOut])
        if let streams = values[.maxConcurrentStreams] {
            listener.maxConcurrentStreams = try whole(
                "--max-concurrent-streams", streams, from: 1, upTo: HTTPSServerConfiguration.streamLimit)
        }
        return listener
    }

    private static func rate(_ name: String, _ value: String) throws(ArgumentError) -> Double {
        guard let rate = Double(value), (0...1).contains(rate) else {
            throw ArgumentError("\(name) must be a fraction from 0 to 1 (0.05 is 5 %), got \"\(value)\"")
        }
        return rate
    }

    /// `value` of flag `name` as a whole number from `lowest` to `limit`, or the refusal naming the flag.
    public static func whole(
        _ name: String, _ value: String, from lowest: Int = 0, upTo limit: Int
    ) throws(ArgumentError) -> Int {
        guard let number = Int(value), (lowest...limit).contains(number) else {
            throw ArgumentError("\(name) must be a whole number from \(lowest) to \(limit), got \"\(value)\"")
        }
        return number
    }
}

extension FCMSimulator {
    /// The simulator `herald fcm-sim` runs for `arguments`: the shell configured by its flags, and each of `sides` made
    /// from its own.
    public static func parse(
        arguments: [String], sides: [any SimulatorSide.Type]
    ) throws(Configuration.ArgumentError) -> FCMSimulator {
        let (configuration, values) = try Configuration.parse(
            arguments: arguments, sideFlags: Set(sides.flatMap { $0.help.flags }))
        var made: [any SimulatorSide] = []
        for side in sides {
            made.append(try side.init(flags: values.filter { side.help.flags.contains($0.key) }))
        }
        return FCMSimulator(configuration: configuration, sides: made)
    }
}
