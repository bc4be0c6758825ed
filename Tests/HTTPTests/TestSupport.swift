import Foundation
@testable import HTTP
import TestSupport

extension TestHandler {
    /// Answers 200 with the target, and the body after a newline when there is one.
    static let echo = TestHandler(limit: 1 << 20) { request, responder in
        let body = request.body.isEmpty ? "" : "\n" + String(decoding: request.body, as: UTF8.self)
        responder.respond(.text(200, request.target + body))
    }
}

/// A server on an ephemeral loopback port (or a given Unix socket), shut down by the caller.
func startServer(
    _ handler: TestHandler = .echo, address: ListenAddress = .tcp(host: "127.0.0.1", port: 0),
    configure: (inout HTTPServerConfiguration) -> Void = { _ in }
) throws -> (HTTPServer, ListenAddress) {
    var configuration = HTTPServerConfiguration(address: address)
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, handler: handler)
    return (server, try server.start())
}

/// A one-shot latch tests wait on, with a deadline so a broken server fails instead of hanging.
final class Latch: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func open() { semaphore.signal() }

    func wait(seconds: Double = 5) -> Bool {
        semaphore.wait(timeout: .now() + seconds) == .success
    }
}
