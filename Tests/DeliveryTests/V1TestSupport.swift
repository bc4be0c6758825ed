import Foundation
import HTTP
import OAuth
import Send
import Support
import Synchronization
import TestSupport

@testable import Delivery

/// One key for the suite's service accounts: RSA key generation is the slow part.
let v1TestKey = try! RSAPrivateKey.generate(bits: 2048)

func testAccount(key: RSAPrivateKey = v1TestKey) -> ServiceAccount {
    ServiceAccount(clientEmail: "herald-test@test-project.iam.gserviceaccount.com", privateKey: key,
                   projectID: "test-project", tokenURI: nil)
}

/// A token endpoint on 127.0.0.1: answers each request with `answer(n, form)` (n counts from 1) and keeps what it
/// was sent.
final class TestTokenEndpoint: HTTPHandler, Sendable {
    private let server = Mutex<HTTPServer?>(nil)
    private let received = Mutex<[[String: String]]>([])
    private let answer: @Sendable (Int, [String: String]) -> HTTPResponse
    private(set) nonisolated(unsafe) var url = ""

    /// By default: a fresh token `token-n` valid for `lifetime` seconds.
    init(lifetime: Int = 3600, answer: (@Sendable (Int, [String: String]) -> HTTPResponse)? = nil) throws {
        self.answer = answer ?? { n, _ in
            .json(200, #"{"access_token":"token-\#(n)","expires_in":\#(lifetime),"token_type":"Bearer"}"#)
        }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: self)
        guard case .tcp(_, let port) = try server.start() else { fatalError("a TCP address gives a TCP port") }
        url = "http://127.0.0.1:\(port)/token"
        self.server.withLock { $0 = server }
    }

    func shutdown() {
        server.withLock { $0 }?.shutdown(gracePeriod: 1)
    }

    var forms: [[String: String]] { received.withLock { $0 } }

    func bodyLimit(method: String, path: String) -> Int { 1 << 20 }

    func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            form[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        form["content-type"] = request.header("content-type") ?? ""
        let count = received.withLock { list in
            list.append(form)
            return list.count
        }
        responder.respond(answer(count, form))
    }
}

/// The readiness `prepare`/`fetch` reports, awaited on the calling thread.
func readiness(_ start: (@escaping @Sendable (ProviderReadiness) -> Void) -> Void) -> ProviderReadiness? {
    let result = Mutex<ProviderReadiness?>(nil)
    let done = DispatchSemaphore(value: 0)
    start { value in
        result.withLock { $0 = value }
        done.signal()
    }
    guard done.wait(timeout: .now() + 20) == .success else { return nil }
    return result.withLock { $0 }
}

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let millis: Mutex<Int64>
    init(_ start: Int64 = 1_700_000_000_000) { millis = Mutex(start) }
    var now: Int64 { millis.withLock { $0 } }
    func advance(seconds: Int64) { millis.withLock { $0 += seconds * 1000 } }
}
