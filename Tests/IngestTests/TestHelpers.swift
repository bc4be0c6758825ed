import Dispatch
import Foundation
import HTTP
import Ingest
import Support

func validate(_ text: String) -> Result<IncomingMessage, APIError> {
    MessageValidator.validate(body: Array(text.utf8))
}

/// The error code for `text`, or nil when it is valid.
func errorCode(_ text: String) -> String? {
    if case .failure(let error) = validate(text) { error.code } else { nil }
}

func errorCode(_ result: Result<IncomingMessage, APIError>) -> String? {
    if case .failure(let error) = result { error.code } else { nil }
}

func accepted(_ text: String) -> IncomingMessage? {
    try? validate(text).get()
}

/// A JSON body from a value, so tests can build large or exact payloads without string surgery.
func body(_ value: JSON) -> String {
    value.serialized()
}

/// Waits for the one response a handler gives, from whichever thread gives it.
final class WaitingResponder: HTTPResponder, @unchecked Sendable {
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
final class ScratchDirectory: Sendable {
    let url: URL

    init(prefix: String) {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A count bumped from any thread (the writer's completions).
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
