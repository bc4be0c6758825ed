import Foundation

/// A script of `scripts/` started for a test (under node, or the `interpreter` given): it prints one JSON line of
/// ports once listening, and is stopped (SIGTERM) when the test lets go of it.
final class NodeScript: @unchecked Sendable {
    private let process: Process
    /// The script's first line, `{"port": P, …}`.
    let ports: [String: Int]

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `script` relative to the repository; `arguments` after it.
    init(_ script: String, _ arguments: [String], interpreter: String = "node") throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [interpreter, repository.appendingPathComponent(script).path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        var line: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { throw Failure(description: "\(script) exited before listening") }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        guard let ports = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Int], ports["port"] != nil
        else { throw Failure(description: "\(script): unexpected first line \(String(decoding: line, as: UTF8.self))") }
        self.ports = ports
    }

    deinit {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
