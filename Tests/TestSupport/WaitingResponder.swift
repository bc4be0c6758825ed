import Dispatch
import Foundation
import HTTP

// What the tests of HTTP handlers (ingest, the console) share.

/// Waits for the one response a handler gives, from whichever thread gives it.
public final class WaitingResponder: HTTPResponder, @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var response: HTTPResponse?

    public init() {}

    public func respond(_ response: HTTPResponse) {
        lock.withLock { self.response = response }
        done.signal()
    }

    public func wait() -> HTTPResponse {
        // A bound so a broken handler fails the test instead of hanging it; not a timing assertion.
        guard done.wait(timeout: .now() + 30) == .success else { return HTTPResponse(status: 0) }
        return lock.withLock { response ?? HTTPResponse(status: 0) }
    }
}

/// A fresh directory, removed with its files when the suite instance goes.
public final class ScratchDirectory: Sendable {
    public let url: URL

    public init(prefix: String) {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// What the server does with `request`: its head to `admit` first (the body unread), then the whole request to
/// `handle`; the answer either gives.
public func exchange(_ request: HTTPRequest, with handler: any HTTPHandler) -> HTTPResponse {
    var head = request
    head.body = []
    if let refusal = handler.admit(head) { return refusal }
    let responder = WaitingResponder()
    handler.handle(request, responder: responder)
    return responder.wait()
}

extension HTTPResponse {
    /// The first value of a header, its name in any case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
