import Foundation
import Send

/// `scripts/tcp-fault-proxy.js` under node: a TCP proxy on an ephemeral loopback port in front of `targetPort`, that
/// resets or freezes every connection through it on command (see the script). TLS passes through: a client dials the
/// proxy's port and checks the target's certificate.
public final class FaultProxy: @unchecked Sendable {
    public let port: Int
    public let controlPort: Int
    private let node: NodeScript
    private let controlPool = HTTPClientPool(maxConnectionsPerHost: 1, name: "proxy-control", caFile: nil)

    public init(targetPort: Int) throws {
        node = try NodeScript("scripts/tcp-fault-proxy.js", ["--target", "127.0.0.1:\(targetPort)"])
        guard let port = node.ports["port"], let controlPort = node.ports["control_port"] else {
            throw ProxyError(description: "the proxy named no control port")
        }
        self.port = port
        self.controlPort = controlPort
    }

    deinit {
        controlPool.shutdown(gracePeriod: 0)
    }

    /// Resets every connection open now; returns how many.
    @discardableResult
    public func reset() async throws -> Int {
        try await control("reset")["reset"] ?? -1
    }

    /// Silences every connection open now (nothing forwarded, nothing closed); returns how many.
    @discardableResult
    public func freeze() async throws -> Int {
        try await control("freeze")["frozen"] ?? -1
    }

    /// The proxy's counts: `accepted`, `open`, `reset`, `frozen`, `bytes_up`, `bytes_down`.
    public func stats() async throws -> [String: Int] {
        try await control("stats")
    }

    /// A POST to the control port (the pool only POSTs; the proxy answers /stats to any method).
    private func control(_ path: String) async throws -> [String: Int] {
        let (result, _) = await exchange(controlPool, OutboundRequest(url: "http://127.0.0.1:\(controlPort)/\(path)"))
        guard case .response(200, _, let body, _) = result,
              let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Int]
        else { throw ProxyError(description: "/\(path): \(result)") }
        return object
    }

    public struct ProxyError: Error, CustomStringConvertible {
        public var description: String
    }
}
