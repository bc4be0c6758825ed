import Foundation
import HMSSimulator
import HTTP

extension FCMSimulator.Configuration {
    /// Why `herald fcm-sim` arguments were refused; `description` is the message for the user.
    public struct ArgumentError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    /// Reads `herald fcm-sim` flags (see `help`). `--listen` is accepted and ignored: the CLI binds the address. The
    /// TLS flags make `tls`, whose files are read when it is served (`FCMSimulator.serveTLS`).
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
        var tlsValues: [Flag: String] = [:]
        var hmsAppID: String?
        var hmsSecret: String?
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
            case .hmsAppID:
                guard !value.isEmpty, value.utf8.count <= 64, value.utf8.allSatisfy({ (0x30...0x39).contains($0) })
                else { throw ArgumentError("\(name) must be the app's number (digits), got \"\(value.prefix(100))\"") }
                hmsAppID = value
            case .hmsClientSecretFile:
                let text = FileManager.default.contents(atPath: value).flatMap { String(data: $0, encoding: .utf8) }
                guard let secret = text?.trimmingCharacters(in: .whitespacesAndNewlines), !secret.isEmpty else {
                    throw ArgumentError("\(name): cannot read a client secret from \(value)")
                }
                hmsSecret = secret
            case .tlsListen, .tlsCertificate, .tlsKey, .tlsCertificateOut, .maxConcurrentStreams:
                guard !value.isEmpty else { throw ArgumentError("\(name) must not be empty") }
                tlsValues[flag] = value
            }
        }
        configuration.tls = try tlsListener(tlsValues)
        switch (hmsAppID, hmsSecret) {
        case (let appID?, let secret?):
            configuration.hmsAccount = HMSSimulator.Account(appID: appID, clientSecret: secret)
        case (_?, nil): throw ArgumentError("--hms-app-id needs --hms-client-secret-file (the client's secret)")
        case (nil, _?): throw ArgumentError("--hms-client-secret-file needs --hms-app-id (the app it is for)")
        case (nil, nil): break
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
        case tlsListen = "--tls-listen"
        case tlsCertificate = "--tls-cert"
        case tlsKey = "--tls-key"
        case tlsCertificateOut = "--tls-cert-out"
        case maxConcurrentStreams = "--max-concurrent-streams"
        case hmsAppID = "--hms-app-id"
        case hmsClientSecretFile = "--hms-client-secret-file"
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

    private static func whole(
        _ name: String, _ value: String, from lowest: Int = 0, upTo limit: Int
    ) throws(ArgumentError) -> Int {
        guard let number = Int(value), (lowest...limit).contains(number) else {
            throw ArgumentError("\(name) must be a whole number from \(lowest) to \(limit), got \"\(value)\"")
        }
        return number
    }
}
