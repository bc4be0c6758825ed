import Dispatch
import Foundation
import HTTP

/// Waits for the one response a handler gives, from whichever thread gives it.
final class Responder: HTTPResponder, @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var response: HTTPResponse?

    func respond(_ response: HTTPResponse) {
        lock.withLock { self.response = response }
        done.signal()
    }

    func wait() -> HTTPResponse {
        // A bound so a broken handler fails the test instead of hanging it; not a timing assertion.
        guard done.wait(timeout: .now() + 30) == .success else { return HTTPResponse(status: 0) }
        return lock.withLock { response ?? HTTPResponse(status: 0) }
    }
}

/// A fresh directory, removed with its files when the suite instance goes.
final class ScratchFolder: Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-console-\(UUID().uuidString)")

    init() { try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }

    deinit { try? FileManager.default.removeItem(at: url) }
}
