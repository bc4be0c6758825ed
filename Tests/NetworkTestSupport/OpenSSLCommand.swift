import Foundation

/// The `openssl` command (from `scripts/install-deps`), for certificates and keys a test makes for its run.
public enum OpenSSLCommand {
    public struct Failed: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `openssl arguments` in `directory`; throws unless it exits 0.
    public static func run(_ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failed(description: "openssl \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}
