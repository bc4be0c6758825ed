import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real `herald fcm-sim` process on an ephemeral loopback port.
final class SimulatorProcess: @unchecked Sendable {
    private let child: LoggingProcess
    let endpoint: String
    let baseURL: URL
    /// The "fcm-sim listening" log line: `tls_address` and `https_endpoint` too with `--tls-listen`.
    let announcement: [String: Any]

    var process: Process { child.process }

    init(_ arguments: [String] = []) throws {
        child = try LoggingProcess(["fcm-sim", "--listen", "127.0.0.1:0"] + arguments)
        announcement = try child.waitForLine("fcm-sim listening")
        endpoint = announcement["endpoint"] as? String ?? ""
        baseURL = URL(string: endpoint)!.deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `POST /control` with a JSON object, e.g. `{"fail_next": 1, "status": 503, "retry_after": "2"}`.
    func control(_ json: String) async throws {
        var request = URLRequest(url: baseURL.appendingPathComponent("control"))
        request.httpMethod = "POST"
        request.httpBody = Data(json.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        precondition((response as! HTTPURLResponse).statusCode == 200, "control refused \(json)")
    }

    /// The requests the simulator received, oldest first.
    func requests() async throws -> [[String: Any]] {
        let (data, _) = try await URLSession.shared.data(from: baseURL.appendingPathComponent("stats"))
        let stats = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return stats?["requests"] as? [[String: Any]] ?? []
    }
}

extension HeraldProcess {
    /// Polls `GET /v1/messages/{id}` until no delivery is queued or in flight (bounded); returns the last answer.
    func waitUntilSettled(_ id: String, seconds: Double = 60,
                          headers: [String: String] = [:]) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        var last: [String: Any] = [:]
        while Date() < deadline {
            last = try await request("GET", "/v1/messages/\(id)", headers: headers).json
            let counts = last["counts"] as? [String: Int] ?? [:]
            if (counts["queued"] ?? 1) + (counts["inflight"] ?? 1) == 0 { return last }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        // A last look after the deadline: when this task was held up past it (a busy machine, the test pool's
        // threads blocked by other tests), the answer from before the wait would be stale.
        return try await request("GET", "/v1/messages/\(id)", headers: headers).json
    }

    /// Each delivery of a message answer as "token state reason attempts canonical".
    static func summary(_ message: [String: Any]) -> [String: String] {
        var rows: [String: String] = [:]
        for delivery in message["deliveries"] as? [[String: Any]] ?? [] {
            let token = delivery["token"] as? String ?? "?"
            rows[token] = [
                delivery["state"] as? String ?? "?", delivery["reason"] as? String ?? "-",
                String(delivery["attempts"] as? Int ?? -1), delivery["canonical_token"] as? String ?? "-",
            ].joined(separator: " ")
        }
        return rows
    }
}
