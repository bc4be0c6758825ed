import FCMSimulator

/// The sandbox before its simulator starts: the simulator's sides that must trust its throw-away credentials, and
/// credentials the apps of one provider share (one throw-away key for all of them, as a side knows one).
public final class SandboxSetup {
    private var sides: [ObjectIdentifier: any SimulatorSide] = [:]
    private var shared: [String: Any] = [:]

    public init() {}

    /// Makes `side` the simulator's side of its type: one that trusts the sandbox's credentials.
    public func simulate(_ side: some SimulatorSide) {
        sides[ObjectIdentifier(type(of: side))] = side
    }

    /// The sandbox's simulator with a side of each of `types` (the list's, `ProviderList.simulatorSides`): the one
    /// `simulate` was given, else one made as `herald fcm-sim` makes it without flags.
    public func simulator(sides types: [any SimulatorSide.Type]) throws -> FCMSimulator {
        FCMSimulator(sides: try types.map { type in try sides[ObjectIdentifier(type)] ?? type.init(flags: [:]) })
    }

    /// The value kept under `key`, made by `make` the first time it is asked for.
    public func shared<Value>(_ key: String, _ make: () throws -> Value) rethrows -> Value {
        if let value = shared[key] as? Value { return value }
        let value = try make()
        shared[key] = value
        return value
    }
}

/// The sandbox's simulator, listening: its plain HTTP base URL, and over TLS (HTTP/2) when an app needed it.
public struct SandboxSimulator: Sendable {
    /// `http://127.0.0.1:PORT`.
    public var url: String
    /// The TLS front's base URL and the CA file its apps trust.
    public var tls: (url: String, caFile: String)?

    public init(url: String, tls: (url: String, caFile: String)?) {
        (self.url, self.tls) = (url, tls)
    }
}

/// Settings of an app the sandbox sends to over TLS (HTTP/2), as production does to Apple and the push services:
/// to the simulator's TLS front, trusted through its CA file.
public protocol SandboxedOverTLS: AppSettings {
    /// The CA file the endpoint's certificate is checked against instead of the default ones (the sandbox's alone).
    var caFile: String? { get set }
}

extension SandboxedOverTLS {
    public var sandboxNeedsTLS: Bool { true }

    public mutating func connectSandbox(_ simulator: SandboxSimulator) {
        guard let tls = simulator.tls else { return }
        endpoint = tls.url
        caFile = tls.caFile
    }
}
