import Dispatch
import Glibc
import HTTP
import NetworkTestSupport
import Send
import Support
import TestSupport

extension TestHandler {
    /// Answers 200 with the request's body, and what the server saw of the request in headers.
    static let echo = TestHandler { request, responder in
        responder.respond(HTTPResponse(
            status: 200,
            headers: [
                ("X-Seen-Method", request.method),
                ("X-Seen-Target", request.target),
                ("X-Seen-Content-Type", request.header("content-type") ?? "-"),
                ("X-Seen-Authorization", request.header("authorization") ?? "-"),
                ("X-Seen-Expect", request.header("expect") ?? "-"),
            ],
            body: request.body))
    }

    /// Takes the request and never answers it. The responders are kept, as one let go would answer 500.
    static func silent(onRequest: @escaping @Sendable () -> Void = {}) -> TestHandler {
        let parked = Locked<[any HTTPResponder]>([])
        return TestHandler { _, responder in
            parked.withLock { $0.append(responder) }
            onRequest()
        }
    }
}

/// A started server on an ephemeral loopback port; the caller shuts it down.
func startServer(_ handler: TestHandler) throws -> (server: HTTPServer, port: Int) {
    let server = HTTPServer(
        configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: handler)
    guard case .tcp(_, let port) = try server.start() else { fatalError("a TCP address gives a TCP port") }
    return (server, port)
}

/// One request through `pool`, awaited. A completion that ran twice would trap the checked continuation.
func send(
    _ pool: any RequestTransport, _ request: OutboundRequest
) async -> (result: TransportResult, seconds: Double) {
    await withCheckedContinuation { continuation in
        pool.submit(request) { result, seconds in continuation.resume(returning: (result, seconds)) }
    }
}

/// Waits for the next event a handler reports.
func next(_ events: AsyncStream<Void>) async {
    for await _ in events { return }
}

/// A loopback port nothing listens on: bound (so no one else gets it) but never `listen`ed, so a connect is
/// refused for certain. Close the returned descriptor when done.
func refusingPort() -> (fd: CInt, port: Int) {
    let fd = socket(AF_INET, CInt(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            precondition(bind(fd, pointer, length) == 0)
            precondition(getsockname(fd, pointer, &length) == 0)
        }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

extension TransportResult {
    var status: Int? {
        guard case .response(let status, _, _, _) = self else { return nil }
        return status
    }

    var body: String? {
        guard case .response(_, _, let body, _) = self else { return nil }
        return String(decoding: body, as: UTF8.self)
    }

    var httpVersion: String? {
        guard case .response(_, _, _, let version) = self else { return nil }
        return version
    }

    /// The failure's stable text (`"timeout"`, `"reset"`, libcurl's or TLS's words).
    var failureReason: String? {
        guard case .failure(let failure) = self else { return nil }
        return failure.description
    }
}

/// Submits `total` requests keeping `window` in flight; returns every result, in completion order.
func run(
    _ pool: some RequestTransport, total: Int, window: Int, request: @escaping @Sendable (Int) -> OutboundRequest
) async -> [TransportResult] {
    await withCheckedContinuation { continuation in
        let state = Locked<(submitted: Int, results: [TransportResult])>((0, []))
        @Sendable func submitNext() {
            let index = state.withLock { state -> Int? in
                guard state.submitted < total else { return nil }
                state.submitted += 1
                return state.submitted - 1
            }
            guard let index else { return }
            pool.submit(request(index)) { result, _ in
                let finished = state.withLock { state -> [TransportResult]? in
                    state.results.append(result)
                    return state.results.count == total ? state.results : nil
                }
                if let finished { continuation.resume(returning: finished) } else { submitNext() }
            }
        }
        for _ in 0..<window { submitNext() }
    }
}

/// An FCM v1 send to the stand-in for token `token-INDEX`.
func message(_ standIn: H2StandIn, _ index: Int, authorization: String = "Bearer a") -> OutboundRequest {
    OutboundRequest(
        url: standIn.sendURL,
        headers: [("Content-Type", "application/json"), ("Authorization", authorization)],
        body: Array(#"{"message":{"token":"token-\#(index)"}}"#.utf8))
}
