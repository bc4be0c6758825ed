import Foundation

/// A `herald` child process whose JSON log lines (stderr) are collected as they arrive.
final class LoggingProcess: @unchecked Sendable {
    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    let process = Process()
    private let stderrPipe = Pipe()
    private let output = NSMutableData()
    private let lock = NSLock()

    /// Starts `herald arguments` with the test's environment minus `HERALD_*`, plus `environment`.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = HeraldProcess.executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        env.merge(environment) { $1 }
        process.environment = env
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.append(data)
        }
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        stderrPipe.fileHandleForReading.readabilityHandler = nil
    }

    private func append(_ data: Data) {
        lock.lock()
        output.append(data)
        lock.unlock()
    }

    var log: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: output as Data, as: UTF8.self)
    }

    /// Log lines as JSON objects.
    var logLines: [[String: Any]] {
        log.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Waits (bounded) for the first log line whose `msg` is `message`.
    func waitForLine(_ message: String, seconds: Double = 30) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let line = logLines.first(where: { $0["msg"] as? String == message }) { return line }
            if !process.isRunning { break }
            usleep(20_000)
        }
        // Once more after the deadline: a test thread held up past it (a busy machine, a pool of threads blocked
        // by other tests) must not fail for a line that arrived meanwhile.
        if let line = logLines.first(where: { $0["msg"] as? String == message }) { return line }
        process.terminate()
        throw StartFailure(description: "no \"\(message)\" log line; stderr:\n\(log)")
    }

    /// Sends a signal and waits for the process to end; returns its exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        // The process is gone, but its last lines may still sit in the pipe: read them before anyone looks.
        stderrPipe.fileHandleForReading.readabilityHandler = nil
        append(stderrPipe.fileHandleForReading.readDataToEndOfFile())
        return process.terminationStatus
    }
}
