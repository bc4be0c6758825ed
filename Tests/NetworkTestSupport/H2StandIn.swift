import Foundation
import Send
import TestSupport

/// `scripts/fcm-h2-standin.js` under node: a real TLS + HTTP/2 server on an ephemeral loopback port, with a
/// self-signed certificate made by `openssl` for this run, that counts connections, concurrent streams and the
/// requests that arrive (see the script for the counts). node and openssl come from `scripts/install-deps`.
public final class H2StandIn: @unchecked Sendable {
    public let port: Int
    public let statsPort: Int
    /// The certificate to trust: pass it as the pool's `caFile`.
    public let caFile: String
    private let node: NodeScript
    private let directory = TemporaryDirectory(prefix: "herald-h2")
    private let statsPool = HTTPClientPool(maxConnectionsPerHost: 1, name: "standin-stats", caFile: nil)

    public var baseURL: String { "https://127.0.0.1:\(port)" }
    /// Every port the script named in its first line (`scripts/hostile-push-standin.js`: one per behaviour).
    public var ports: [String: Int] { node.ports }
    public var sendURL: String { baseURL + "/v1/projects/standin/messages:send" }

    /// `script`: the server to run, relative to the repository (`scripts/h2-misbehaving-server.js` for one that breaks
    /// HTTP/2's rules on purpose).
    public init(_ arguments: [String] = [], script: String = "scripts/fcm-h2-standin.js") throws {
        caFile = directory.path("cert.pem")
        let keyFile = directory.path("key.pem")
        try OpenSSLCommand.run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", keyFile, "-out", caFile, "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ], in: directory.url)

        node = try NodeScript(script, ["--cert", caFile, "--key", keyFile] + arguments)
        guard let port = node.ports["port"], let statsPort = node.ports["stats_port"] else {
            throw StandInError(description: "the stand-in named no stats port")
        }
        self.port = port
        self.statsPort = statsPort
    }

    deinit {
        statsPool.shutdown(gracePeriod: 0)
    }

    /// The stand-in's counts right now.
    public func stats() async throws -> Stats {
        Stats(try await statsObject())
    }

    /// What the server's stats endpoint answers, as JSON.
    public func statsObject() async throws -> [String: Any] {
        let (result, _) = await exchange(statsPool, OutboundRequest(url: "http://127.0.0.1:\(statsPort)/stats"))
        guard case .response(200, _, let body, _) = result,
              let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else { throw StandInError(description: "stats: \(result)") }
        return object
    }

    /// POSTs `body` to the stand-in's control port at `path` (`/subscriptions` of the Web Push stand-in) and
    /// returns the JSON it answers.
    public func post(_ path: String, body: String) async throws -> Any {
        let (result, _) = await exchange(statsPool, OutboundRequest(
            url: "http://127.0.0.1:\(statsPort)\(path)", headers: [("content-type", "application/json")],
            body: Array(body.utf8)))
        guard case .response(200, _, let answer, _) = result else {
            throw StandInError(description: "POST \(path): \(result)")
        }
        return try JSONSerialization.jsonObject(with: Data(answer))
    }

    public struct Stats {
        public var sessions: Int
        public var peakSessions: Int
        public var peakStreams: Int
        public var peakSessionStreams: Int
        public var requests: Int
        public var duplicates: Int
        public var refused: Int

        public init(_ object: [String: Any]) {
            sessions = object["sessions"] as? Int ?? -1
            peakSessions = object["peak_sessions"] as? Int ?? -1
            peakStreams = object["peak_streams"] as? Int ?? -1
            peakSessionStreams = object["peak_session_streams"] as? Int ?? -1
            requests = object["requests"] as? Int ?? -1
            duplicates = object["duplicates"] as? Int ?? -1
            refused = object["refused"] as? Int ?? -1
        }
    }

    public struct StandInError: Error, CustomStringConvertible {
        public var description: String
    }
}

