import Dispatch
import Foundation
import HTTP
import Synchronization

/// Waits for the one response a handler gives, from whichever thread gives it, and keeps that thread.
public final class WaitingResponder: HTTPResponder, Sendable {
    private let answer = Mutex<(response: HTTPResponse, thread: pthread_t)?>(nil)
    private let answered = DispatchSemaphore(value: 0)

    public init() {}

    public func respond(_ response: HTTPResponse) {
        answer.withLock { $0 = (response, pthread_self()) }
        answered.signal()
    }

    /// The response and the thread that gave it; nil when none came within `seconds` — a bound so a broken handler
    /// fails the test instead of hanging it, not a timing assertion.
    public func answer(within seconds: Double = 30) -> (response: HTTPResponse, thread: pthread_t)? {
        guard answered.wait(timeout: .now() + seconds) == .success else { return nil }
        return answer.withLock { $0 }
    }

    /// The response, or status 0 when none came.
    public func wait() -> HTTPResponse { answer()?.response ?? HTTPResponse(status: 0) }
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
