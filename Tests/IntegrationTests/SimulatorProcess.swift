import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real `herald fcm-sim` process on an ephemeral loopback port.
final class SimulatorProcess: @unchecked Sendable {
    let process = Process()
    private let pipe = Pipe()
    private let output = NSMutableData()
    private let lock = NSLock()
    private(set) var endpoint: String = ""
    private(set) var baseURL: URL!

    init(_ arguments: [String] = []) throws {
        process.executableURL = HeraldProcess.executable
        process.arguments = ["fcm-sim", "--listen", "127.0.0.1:0"] + arguments
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock()
            self.output.append(data)
            self.lock.unlock()
        }
        try process.run()
        for _ in 0..<1500 {
            lock.lock()
            let text = String(decoding: output as Data, as: UTF8.self)
            lock.unlock()
            for line in text.split(separator: "\n") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      object["msg"] as? String == "fcm-sim listening", let url = object["endpoint"] as? String
                else { continue }
                endpoint = url
                baseURL = URL(string: url)!.deletingLastPathComponent().deletingLastPathComponent()
                return
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw HeraldProcess.StartFailure(description: "fcm-sim did not start")
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        pipe.fileHandleForReading.readabilityHandler = nil
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
    func waitUntilSettled(_ id: String, seconds: Double = 60, headers: [String: String] = [:]) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        var last: [String: Any] = [:]
        while Date() < deadline {
            last = try await request("GET", "/v1/messages/\(id)", headers: headers).json
            let counts = last["counts"] as? [String: Int] ?? [:]
            if (counts["queued"] ?? 1) + (counts["inflight"] ?? 1) == 0 { return last }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return last
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
