import Foundation

/// A fresh directory for one test's files (databases, sockets, certificates), removed with everything in it when the
/// value is released.
public final class TemporaryDirectory: Sendable {
    public let url: URL

    public init(prefix: String = "herald-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
