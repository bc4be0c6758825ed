import Foundation
import Send

/// `scripts/small-backlog-fcm.py` under python3: a legacy FCM endpoint on Python's `ThreadingHTTPServer` with an
/// accept queue of 5 and a handler that takes `delayMillis`, as small gateways run; it counts the requests it
/// receives by their message's `data.id`.
public final class SmallBacklogFCM: @unchecked Sendable {
    public let port: Int
    private let script: NodeScript
    private let statsPool = HTTPClientPool(maxConnectionsPerHost: 1, name: "backlog-stats", caFile: nil)

    public var endpoint: String { "http://127.0.0.1:\(port)/fcm/send" }

    public init(delayMillis: Int) throws {
        script = try NodeScript(
            "scripts/small-backlog-fcm.py", ["--delay-ms", "\(delayMillis)"], interpreter: "python3")
        port = script.ports["port"]!
    }

    deinit {
        statsPool.shutdown(gracePeriod: 0)
    }

    public struct Stats: Sendable {
        /// Requests received.
        public var received: Int
        /// Different message ids among them.
        public var distinct: Int
        /// Requests for a message id that had arrived before.
        public var duplicates: Int
    }

    public func stats() async throws -> Stats {
        let (result, _) = await exchange(statsPool, OutboundRequest(url: "http://127.0.0.1:\(port)/stats"))
        guard case .response(200, _, let body, _) = result,
              let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Int]
        else { throw H2StandIn.StandInError(description: "stats: \(result)") }
        return Stats(
            received: object["received"] ?? -1, distinct: object["distinct"] ?? -1,
            duplicates: object["duplicates"] ?? -1)
    }
}
