import Foundation
import Synchronization
import Testing

/// The throw-away venv of client libraries from PyPI that `scripts/python-sdks` makes (the FCM SDKs, and the Web Push
/// reference implementations), and running programs to completion.
///
/// The venv needs PyPI the first time. Without it the tests that use it fail rather than skip: CI has PyPI, and a
/// compatibility test that quietly does not run proves nothing.
enum PythonSDKs {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Held while the script runs: two suites making the venv at once would remove each other's.
    private static let making = Mutex(())

    /// The venv's python, the venv made first if it is missing or has other versions.
    static func python() throws -> String {
        let script = root.appendingPathComponent("scripts/python-sdks").path
        let venv = try making.withLock { _ in try run("/bin/sh", [script]) }
        try #require(venv.status == 0, "scripts/python-sdks could not make the SDK venv:\n\(venv.stderr)" as Comment)
        return root.appendingPathComponent(venv.stdout.split(separator: "\n").last.map(String.init) ?? "").path
    }

    /// Runs `executable` in the repository's root to completion; its exit status, standard output and standard error.
    static func run(
        _ executable: String, _ arguments: [String]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = root
        // Standard error goes to a file: pip can write more than a pipe holds while nobody reads it.
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorFile) }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderr = (try? Data(contentsOf: errorFile)) ?? Data()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self),
                String(decoding: stderr, as: UTF8.self))
    }
}
