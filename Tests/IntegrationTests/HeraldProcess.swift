import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real `herald serve` (the binary built next to the test bundle) on an ephemeral loopback port.
final class HeraldProcess: @unchecked Sendable {
    typealias StartFailure = LoggingProcess.StartFailure

    let directory: URL
    private let child: LoggingProcess
    private(set) var baseURL: URL!

    /// The `herald` executable built beside the test bundle.
    static var executable: URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("herald")
    }

    static func makeDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-it-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    var databasePath: String { directory.appendingPathComponent("herald.db").path }
    var process: Process { child.process }
    var log: String { child.log }
    var logLines: [[String: Any]] { child.logLines }

    /// Starts `herald serve` with `arguments` added, and waits for its "listening" log line.
    /// `paused`: app `default` is paused before the start, so what is posted stays queued for inspection.
    /// `database`: a `postgres://` URL (or another path) instead of `herald.db` in `directory`.
    init(directory: URL? = nil, database: String? = nil, arguments: [String] = ["--sandbox"], paused: Bool = false,
         environment: [String: String] = [:]) throws {
        self.directory = directory ?? Self.makeDirectory()
        let path = database ?? self.directory.appendingPathComponent("herald.db").path
        if paused {
            _ = try runHerald(["migrate", "--db", path])
            let pause = try runHerald(["pause", "default", "--db", path, "--reason", "test inspects the queue"])
            guard pause.status == 0 else { throw StartFailure(description: "pause failed: \(pause.stderr)") }
        }
        child = try LoggingProcess(
            ["serve", "--db", path, "--listen", "127.0.0.1:0", "--log-level", "debug"] + arguments,
            environment: environment)
        let address = try child.waitForLine("listening")["address"] as? String ?? ""
        baseURL = URL(string: "http://\(address)")!
    }

    /// Sends a signal and waits for the process to end; returns its exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        child.stop(signal: signal)
    }

    // MARK: - HTTP

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func request(
        _ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:]
    ) async throws -> Reply {
        var request = URLRequest(url: URL(string: path, relativeTo: baseURL)!)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var replyHeaders: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            replyHeaders[String(describing: name).lowercased()] = String(describing: value)
        }
        return Reply(status: http.statusCode, headers: replyHeaders, body: data)
    }
}

/// Runs `herald` with `arguments` (in `directory`, when given) to completion and returns its exit code and standard
/// error.
func runHerald(
    _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil
) throws -> (status: Int32, stderr: String, stdout: String) {
    let process = Process()
    process.executableURL = HeraldProcess.executable
    process.arguments = arguments
    process.currentDirectoryURL = directory
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
    env.merge(environment) { $1 }
    process.environment = env
    let errors = Pipe()
    let output = Pipe()
    process.standardError = errors
    process.standardOutput = output
    try process.run()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: errorData, as: UTF8.self),
            String(decoding: outputData, as: UTF8.self))
}
