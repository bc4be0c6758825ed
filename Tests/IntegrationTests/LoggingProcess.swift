import Foundation
import TestSupport

/// A `herald` child process whose JSON log lines (stderr) are collected as they arrive.
final class LoggingProcess: @unchecked Sendable {
    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    let process = Process()
    private let stderrPipe = Pipe()
    /// What the child wrote to stderr so far, appended by the reader thread.
    private let output = Locked(Data())
    /// Left by the reader thread at the end of stderr (the child gone): then every line is in `output`.
    private let drained = DispatchGroup()

    /// Starts `herald arguments` with the test's environment minus `HERALD_*`, plus `environment`.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = HeraldProcess.executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        env.merge(environment) { $1 }
        process.environment = env
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // A thread of its own reads stderr with plain read(2) until the child closes it. FileHandle's
        // readabilityHandler (a dispatch read source) crashed the whole test process now and then, in libdispatch's
        // `_dispatch_event_loop_drain`, when it was cleared as the child ended (the race of the source's
        // cancellation with the pipe's teardown, swift-corelibs-foundation #5507); the children it had started then
        // held `swift test` up for good.
        let descriptor = stderrPipe.fileHandleForReading.fileDescriptor
        let output = output
        drained.enter()
        Thread { [drained] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count > 0 {
                    let bytes = buffer[..<count]
                    output.withLock { $0.append(contentsOf: bytes) }
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            drained.leave()
        }.start()
    }

    /// The pipe (and its descriptor, which the reader thread reads) lives until the reader has seen its end.
    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        drained.wait()
    }

    var log: String { output.withLock { String(decoding: $0, as: UTF8.self) } }

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
        // The process is gone, but its last lines may still sit in the pipe: wait until they are read.
        drained.wait()
        return process.terminationStatus
    }
}
