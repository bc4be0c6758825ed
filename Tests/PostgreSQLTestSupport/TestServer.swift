import Foundation
import PostgreSQL

/// The PostgreSQL server the tests use: `HERALD_TEST_POSTGRES_URL` when set (scripts/test and CI set it), else a
/// throwaway one this process starts through `scripts/postgres-test-server` and stops when it exits. There is no
/// skipping: a test that cannot have a server fails, saying why.
public enum TestServer {
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    /// The server's connection URL (with its password: test code only).
    public static func url() throws -> String { try started.get() }

    private static let started: Result<String, Unavailable> = {
        if let url = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"], !url.isEmpty {
            return .success(url)
        }
        return Result { try startOwnServer() }.mapError { Unavailable(description: "\($0)") }
    }()

    /// The package root, from this file's path: Tests/PostgreSQLTests/TestServer.swift.
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    private static var ownDirectory: String { "/tmp/herald-postgres-tests-\(getpid())" }

    private static func startOwnServer() throws -> String {
        let script = packageRoot.appendingPathComponent("scripts/postgres-test-server").path
        let (status, output) = try runScript(script, "start")
        guard status == 0, let url = output.split(separator: "\n").last.map(String.init), !url.isEmpty else {
            throw Unavailable(
                description: "no PostgreSQL for the tests: set HERALD_TEST_POSTGRES_URL, or install the server "
                    + "(scripts/install-deps) so \(script) can start one; it said: \(output)")
        }
        atexit {
            _ = try? TestServer.runScript(
                TestServer.packageRoot.appendingPathComponent("scripts/postgres-test-server").path, "stop")
        }
        return url
    }

    /// Runs `sh script command` and returns its exit status and output. posix_spawn and waitpid rather than
    /// Foundation's Process, whose wait needs threads that the tests waiting for the server may all be holding.
    fileprivate static func runScript(_ script: String, _ command: String) throws -> (Int32, String) {
        let output = "\(ownDirectory).output"
        defer { unlink(output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let arguments = ["/bin/sh", script, command]
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_PG_DIR"] = ownDirectory
        let environmentStrings = environment.map { "\($0.key)=\($0.value)" }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environmentStrings.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw Unavailable(description: "cannot run \(script): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : -1
        return (exitStatus, text)
    }
}

/// A database of its own for one test, created on the test server and dropped when the value is released, so
/// tests run in parallel without seeing each other's rows.
public final class TestDatabase {
    public let name: String
    public let url: String
    private let serverURL: String

    public init() throws {
        serverURL = try TestServer.url()
        name = "herald_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        url = Self.url(serverURL, database: name)
        let admin = try PGConnection(url: serverURL)
        try admin.execute("CREATE DATABASE \(name)")
    }

    deinit {
        // FORCE ends connections a test still holds.
        if let admin = try? PGConnection(url: serverURL) {
            _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }

    public func connect() throws -> PGConnection { try PGConnection(url: url) }

    /// `url` with its database (the URI's path) replaced by `database`.
    public static func url(_ url: String, database: String) -> String {
        guard let scheme = url.range(of: "://") else { return "\(url) dbname=\(database)" }
        let rest = url[scheme.upperBound...]
        let pathStart = rest.firstIndex(of: "/") ?? rest.firstIndex(of: "?") ?? rest.endIndex
        let pathEnd = rest[pathStart...].firstIndex(of: "?") ?? rest.endIndex
        return String(url[..<pathStart]) + "/" + database + String(url[pathEnd...])
    }
}
