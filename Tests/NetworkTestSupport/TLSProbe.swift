import Foundation

/// `scripts/tls-probe.js` under node: an independent TLS client (node's tls, http2 and crypto) for tests of Herald's
/// HTTPS server. One run per call: the JSON object in, the JSON line it prints out (see the script for the modes).
///
/// ```swift
/// let answer = try await TLSProbe.run(["mode": "handshake", "port": port, "ca": certificateFile])
/// answer["alpn"] as? String   // "h2"
/// ```
public enum TLSProbe {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs the probe and waits for its answer (it gives up by itself after 20 s), without holding a thread: the
    /// answer is written to a file and read once node has ended.
    public static func run(_ input: [String: Any]) async throws -> [String: Any] {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("tls-probe-\(UUID()).json")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let output = try FileHandle(forWritingTo: outputFile)
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let json = String(decoding: try JSONSerialization.data(withJSONObject: input), as: UTF8.self)
        process.arguments = ["node", repository.appendingPathComponent("scripts/tls-probe.js").path, json]
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume()
            }
        }
        let data = (try? Data(contentsOf: outputFile)) ?? Data()
        guard let answer = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw Failure(description: "tls-probe: unexpected output \(String(decoding: data, as: UTF8.self))")
        }
        return answer
    }

    /// `mode` `h2`'s answers, in request order: status, headers and body of each.
    public static func responses(_ answer: [String: Any]) -> [(status: Int, headers: [String: Any], body: String)] {
        (answer["responses"] as? [[String: Any]] ?? []).map {
            ($0["status"] as? Int ?? 0, $0["headers"] as? [String: Any] ?? [:], $0["body"] as? String ?? "")
        }
    }
}
