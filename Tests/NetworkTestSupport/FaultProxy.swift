import Foundation
import Send

/// `scripts/tcp-fault-proxy.js` under node: a TCP proxy on an ephemeral loopback port in front of `targetPort`, that
/// resets or freezes every connection through it on command (see the script). TLS passes through: a client dials the
/// proxy's port and checks the target's certificate.
public final class FaultProxy: @unchecked Sendable {
    public let port: Int
    public let controlPort: Int
    private let process: Process
    private let controlPool = HTTPClientPool(maxConnectionsPerHost: 1, name: "proxy-control", caFile: nil)

    public init(targetPort: Int) throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "node", repository.appendingPathComponent("scripts/tcp-fault-proxy.js").path,
            "--target", "127.0.0.1:\(targetPort)",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()

        // The first line is {"port": P, "control_port": C}.
        var line: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { throw ProxyError(description: "the proxy exited before listening") }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        let ports = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Int] ?? [:]
        guard let port = ports["port"], let controlPort = ports["control_port"] else {
            throw ProxyError(description: "unexpected first line \(String(decoding: line, as: UTF8.self))")
        }
        self.port = port
        self.controlPort = controlPort
    }

    deinit {
        controlPool.shutdown(gracePeriod: 0)
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
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
