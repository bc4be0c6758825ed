import Foundation
import HTTP
import NetworkTestSupport
import Testing
import TestSupport

/// `HTTPSServer` on an ephemeral loopback port with a throw-away certificate, probed by node's own TLS and HTTP/2
/// clients (`scripts/tls-probe.js`): ALPN, both protocols, the certificate, and what happens to a client that breaks
/// the rules.
@Suite struct HTTPSServerTests {
    /// Answers what the handler saw: `METHOD target version scheme host=… body=N`.
    static let describing = TestHandler(limit: 64) { request, responder in
        let host = request.header("host") ?? "-"
        responder.respond(.text(200, "\(request.method) \(request.target) \(request.version.rawValue) "
            + "\(request.scheme.rawValue) host=\(host) body=\(request.body.count)", headers: [("X-Seen", "yes")]))
    }

    /// A running server and the file its certificate was written to; `stop` shuts it down and removes the file.
    struct Rig {
        let server: HTTPSServer
        let port: Int
        let caFile: String

        func stop() {
            server.shutdown(gracePeriod: 1)
            try? FileManager.default.removeItem(atPath: caFile)
        }

        func probe(_ input: [String: Any]) async throws -> [String: Any] {
            var input = input
            input["port"] = input["port"] ?? port
            if input["ca"] == nil { input["ca"] = caFile }
            return try await TLSProbe.run(input)
        }
    }

    func start(
        _ handler: TestHandler = Self.describing, identity: TLSIdentity? = nil, streams: Int = 1000,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) throws -> Rig {
        let identity = try identity ?? TLSIdentity.selfSigned(names: ["127.0.0.1", "localhost"])
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("https-\(UUID()).pem").path
        try identity.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        var configuration = HTTPSServerConfiguration(
            address: .tcp(host: "127.0.0.1", port: 0), identity: identity, maxConcurrentStreams: streams)
        configure(&configuration.server)
        let server = HTTPSServer(configuration: configuration, handler: handler)
        guard case .tcp(_, let port) = try server.start() else { throw HTTPServerError("not TCP") }
        return Rig(server: server, port: port, caFile: caFile)
    }

    // MARK: - ALPN and the certificate

    @Test func alpnChoosesH2WhenOfferedAndHTTP1Otherwise() async throws {
        let rig = try start()
        defer { rig.stop() }
        let both = try await rig.probe(["mode": "handshake", "alpn": ["http/1.1", "h2"]])
        #expect(both["alpn"] as? String == "h2", "h2 wins whatever the client's order")
        let http1 = try await rig.probe(["mode": "handshake", "alpn": ["http/1.1"]])
        #expect(http1["alpn"] as? String == "http/1.1")
        let none = try await rig.probe(["mode": "handshake", "alpn": [String]()])
        #expect(none["alpn"] is NSNull, "no ALPN offered, none chosen: HTTP/1.1")
        #expect(none["authorized"] as? Bool == true)
    }

    @Test func theSelfSignedCertificateNamesLoopbackAndVerifiesOnlyAgainstItself() async throws {
        let rig = try start()
        defer { rig.stop() }
        let certificate = try await rig.probe(["mode": "cert"])
        #expect(certificate["ip127"] as? Bool == true)
        #expect(certificate["localhost"] as? Bool == true)
        #expect(certificate["ca"] as? Bool == false, "a leaf, trusted as itself")
        #expect(certificate["curve"] as? String == "prime256v1")

        let byAddress = try await rig.probe(["mode": "handshake"])
        #expect(byAddress["authorized"] as? Bool == true, "\(byAddress)")
        let byName = try await rig.probe(["mode": "handshake", "host": "localhost"])
        #expect(byName["authorized"] as? Bool == true, "\(byName)")
        let untrusted = try await rig.probe(["mode": "handshake", "ca": NSNull()])
        #expect(untrusted["authorized"] as? Bool == false)
        #expect(untrusted["error"] as? String == "DEPTH_ZERO_SELF_SIGNED_CERT")
    }

    @Test func aCertificateAndKeyFromFilesAreServed() async throws {
        let made = try TLSIdentity.selfSigned(names: ["localhost"])
        let directory = TemporaryDirectory(prefix: "https-files")
        let certificateFile = directory.path("cert.pem")
        let keyFile = directory.path("key.pem")
        try made.certificatePEM.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        try made.privateKeyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)

        let rig = try start(identity: try TLSIdentity(certificateFile: certificateFile, keyFile: keyFile))
        defer { rig.stop() }
        let answer = try await rig.probe(["mode": "handshake", "host": "localhost"])
        #expect(answer["authorized"] as? Bool == true, "\(answer)")
        let byAddress = try await rig.probe(["mode": "handshake"])
        #expect(byAddress["authorized"] as? Bool == false, "the certificate names localhost only: \(byAddress)")
    }

    @Test func aKeyThatIsNotTheCertificatesIsRefusedAtStart() throws {
        let one = try TLSIdentity.selfSigned(names: ["127.0.0.1"])
        let other = try TLSIdentity.selfSigned(names: ["127.0.0.1"])
        let mismatched = TLSIdentity(certificatePEM: one.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        let server = HTTPSServer(
            configuration: HTTPSServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0), identity: mismatched),
            handler: Self.describing)
        #expect {
            _ = try server.start()
        } throws: { error in
            "\(error)".contains("does not belong to the certificate")
        }
        let garbage = TLSIdentity(certificatePEM: "not a certificate", privateKeyPEM: one.privateKeyPEM)
        #expect {
            _ = try HTTPSServer(
                configuration: HTTPSServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0), identity: garbage),
                handler: Self.describing
            ).start()
        } throws: { error in
            "\(error)".contains("no PEM certificate")
        }
        #expect(throws: HTTPServerError.self) { try TLSIdentity(certificateFile: "/nonexistent", keyFile: "/x") }
    }

    // MARK: - HTTP/2

    @Test func http2StreamsAreMultiplexedOnOneConnectionWithTheAdvertisedLimit() async throws {
        let rig = try start(streams: 7)
        defer { rig.stop() }
        let requests: [[String: Any]] = (0..<20).map { index in
            ["method": "POST", "path": "/item/\(index)?q=1", "body": String(repeating: "x", count: index)]
        }
        let answer = try await rig.probe(["mode": "h2", "requests": requests])
        #expect(answer["alpn"] as? String == "h2")
        #expect((answer["settings"] as? [String: Any])?["maxConcurrentStreams"] as? Int == 7)
        let responses = TLSProbe.responses(answer)
        #expect(responses.count == 20)
        for (index, response) in responses.enumerated() {
            #expect(response.status == 200)
            #expect(response.body == "POST /item/\(index)?q=1 HTTP/2 https host=127.0.0.1:\(rig.port) body=\(index)")
            #expect(response.headers["x-seen"] as? String == "yes", "header names are lowercased for HTTP/2")
        }
        let statistics = rig.server.statistics
        #expect(statistics.http2Connections == 1, "every stream on the one connection")
        #expect(statistics.http2Requests == 20)
        #expect(statistics.http1Requests == 0)
    }

    @Test func anHTTP2BodyOverTheLimitIsAnswered413WithoutTheHandler() async throws {
        let rig = try start()
        defer { rig.stop() }
        let answer = try await rig.probe(["mode": "h2", "requests": [
            ["method": "POST", "path": "/big", "body": String(repeating: "x", count: 65)],
            ["method": "POST", "path": "/small", "body": String(repeating: "x", count: 64)],
        ]])
        let responses = TLSProbe.responses(answer)
        #expect(responses.map(\.status) == [413, 200])
        #expect(responses.first?.body.contains("PayloadTooLarge") == true)
        #expect(rig.server.statistics.http2Requests == 1)
    }

    @Test func anHTTP2ConnectionThatBreaksTheProtocolIsClosedAlone() async throws {
        let rig = try start()
        defer { rig.stop() }
        // The client preface, then a SETTINGS frame whose length is not a multiple of 6: a connection error
        // (FRAME_SIZE_ERROR, RFC 9113 §6.5).
        let preface = "505249202a20485454502f322e300d0a0d0a534d0d0a0d0a"
        let broken = try await rig.probe([
            "mode": "garbage", "alpn": ["h2"], "hex": preface + "000005040000000000ffffffffff",
        ])
        #expect(broken["alpn"] as? String == "h2")
        #expect(broken["closed"] as? Bool == true)
        #expect(broken["goaway"] as? Bool == true, "nghttp2 says why before the close: \(broken)")

        let after = try await rig.probe(["mode": "h2", "requests": [["path": "/still-here"]]])
        #expect(TLSProbe.responses(after).map(\.status) == [200])
    }

    // MARK: - HTTP/2 streams the server ends itself

    @Test func anHTTP2StreamWhoseHeadOrBodyStallsIsAnswered408AndResetWithItsBudgetBack() async throws {
        // The header timeout also bounds the TLS handshake: long enough for one on a loaded machine.
        let rig = try start(configure: {
            $0.headerTimeout = 2
            $0.bodyTimeout = 0.3
            $0.maxBodyBytesInFlight = 8
        })
        defer { rig.stop() }
        // Stream 1 sends 5 of its 8 body bytes, stream 3 half its header block (no CONTINUATION follows); then
        // nothing more.
        let stalled = try await rig.probe(["mode": "frames", "until": ["rst:1", "rst:3"], "hex": H2.hex(
            H2.preface,
            H2.headers(1, method: "POST", path: "/slow", contentLength: 8, endStream: false),
            H2.frame(.data, stream: 1, Array("12345".utf8)),
            H2.headers(3, path: "/half", endStream: true, endHeaders: false))])
        let frames = H2.Seen(stalled)
        for stream in [1, 3] {
            #expect(frames.text(on: stream).contains("RequestTimeout"), "answered 408 as over HTTP/1.1: \(stalled)")
            #expect(frames.reset(stream) == H2.noError, "then reset, the request being unfinished: \(stalled)")
        }
        // The 5 bytes went back to the budget of 8: a whole 8-byte body fits again.
        let after = try await rig.probe(["mode": "frames", "until": ["end:1"], "hex": H2.hex(
            H2.preface, H2.headers(1, method: "POST", path: "/after", contentLength: 8, endStream: false),
            H2.frame(.data, flags: H2.endStream, stream: 1, Array("12345678".utf8)))])
        #expect(H2.Seen(after).text(on: 1).hasSuffix("body=8"), "\(after)")
        #expect(rig.server.statistics.http2Requests == 1, "the stalled streams never reached the handler")
    }

    @Test func anHTTP2AnswerTheClientsWindowHoldsBackIsReset() async throws {
        // The idle timeout also closes the connection between the handshake and the request: long enough for that gap
        // on a loaded machine.
        let rig = try start(configure: { $0.idleTimeout = 2 })
        defer { rig.stop() }
        // SETTINGS_INITIAL_WINDOW_SIZE 0: the server may send the response's HEADERS but none of its DATA.
        let answer = try await rig.probe(["mode": "frames", "until": ["rst:1"], "hex": H2.hex(
            H2.preface(settings: [(id: 4, value: 0)]), H2.headers(1, path: "/held", endStream: true))])
        let frames = H2.Seen(answer)
        #expect(frames.reset(1) == H2.cancel, "\(answer)")
        #expect(frames.types(on: 1) == [H2.FrameType.headers.rawValue, H2.FrameType.rstStream.rawValue])
        #expect(rig.server.statistics.http2Requests == 1)
    }

    @Test func anHTTP2StreamResetInTheReadThatEndsItIsNotHandled() async throws {
        let rig = try start()
        defer { rig.stop() }
        let answer = try await rig.probe(["mode": "frames", "until": ["end:3"], "hex": H2.hex(
            H2.preface,
            H2.headers(1, method: "POST", path: "/reset", contentLength: 3, endStream: false),
            H2.frame(.data, flags: H2.endStream, stream: 1, Array("abc".utf8)),
            H2.frame(.rstStream, stream: 1, H2.code(H2.cancel)),
            H2.headers(3, path: "/after", endStream: true))])
        let frames = H2.Seen(answer)
        #expect(frames.text(on: 3).hasPrefix("GET /after HTTP/2"), "\(answer)")
        #expect(frames.types(on: 1).isEmpty, "nothing answers the reset stream: \(answer)")
        #expect(rig.server.statistics.http2Requests == 1, "only /after reached the handler")
    }

    @Test func anHTTP2StreamTheServerRefusesIsAnsweredThenReset() async throws {
        let rig = try start()
        defer { rig.stop() }
        // 1: a declared body over the limit of 64; 3: a body that grows past it; 5: a complete request.
        let answer = try await rig.probe(["mode": "frames", "until": ["rst:1", "rst:3", "end:5"], "hex": H2.hex(
            H2.preface,
            H2.headers(1, method: "POST", path: "/declared", contentLength: 100, endStream: false),
            H2.headers(3, method: "POST", path: "/grown", endStream: false),
            H2.frame(.data, stream: 3, [UInt8](repeating: 0x78, count: 65)),
            H2.headers(5, path: "/fine", endStream: true))])
        let frames = H2.Seen(answer)
        for stream in [1, 3] {
            #expect(frames.text(on: stream).contains("PayloadTooLarge"), "\(answer)")
            #expect(frames.reset(stream) == H2.noError, "the client is told to stop sending: \(answer)")
        }
        #expect(frames.text(on: 5).hasPrefix("GET /fine HTTP/2"))
        #expect(rig.server.statistics.http2Requests == 1)
    }

    @Test func anHTTP2StreamOverTheConcurrencyLimitIsRefused() async throws {
        let rig = try start(streams: 1)
        defer { rig.stop() }
        // Stream 1 stays open (no END_STREAM); stream 3 is one too many.
        let answer = try await rig.probe(["mode": "frames", "until": ["rst:3"], "hex": H2.hex(
            H2.preface,
            H2.headers(1, method: "POST", path: "/open", endStream: false),
            H2.headers(3, path: "/over", endStream: true))])
        #expect(H2.Seen(answer).reset(3) == H2.refusedStream, "\(answer)")
        #expect(rig.server.statistics.http2Requests == 0)
    }

    // MARK: - HTTP/1.1 over TLS

    @Test func http1OverTLSGoesThroughTheParserWithKeepAliveAndPipelining() async throws {
        let rig = try start()
        defer { rig.stop() }
        let text = "POST /one HTTP/1.1\r\nHost: example\r\nContent-Length: 3\r\n\r\nabc"
            + "GET /two HTTP/1.1\r\nHost: example\r\nConnection: close\r\n\r\n"
        let answer = try await rig.probe(["mode": "raw", "alpn": ["http/1.1"], "text": text])
        #expect(answer["alpn"] as? String == "http/1.1")
        let reply = answer["reply"] as? String ?? ""
        #expect(reply.contains("POST /one HTTP/1.1 https host=example body=3"), "\(reply)")
        #expect(reply.contains("GET /two HTTP/1.1 https host=example body=0"), "\(reply)")
        #expect(reply.components(separatedBy: "HTTP/1.1 200 OK").count == 3, "two answers on one connection")

        let noALPN = try await rig.probe([
            "mode": "raw", "alpn": [String](), "text": "GET /three HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        ])
        #expect((noALPN["reply"] as? String ?? "").contains("GET /three HTTP/1.1 https host=h"))
        #expect(rig.server.statistics.http1Requests == 3)
        #expect(rig.server.statistics.http1Connections == 2)
    }

    @Test func http1OverTLSGetsTheParsersRefusals() async throws {
        let rig = try start()
        defer { rig.stop() }
        let malformed = try await rig.probe([
            "mode": "raw", "alpn": ["http/1.1"], "text": "GET /x HTTP/1.1\r\nBad Header\r\n\r\n",
        ])
        #expect((malformed["reply"] as? String ?? "").hasPrefix("HTTP/1.1 400 Bad Request"), "\(malformed)")
        let tooLarge = try await rig.probe([
            "mode": "raw", "alpn": ["http/1.1"], "text": "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 65\r\n\r\n",
        ])
        #expect((tooLarge["reply"] as? String ?? "").hasPrefix("HTTP/1.1 413"), "\(tooLarge)")
        #expect(rig.server.statistics.http1Requests == 0)
    }

    // MARK: - Failed handshakes

    @Test func aFailedHandshakeClosesThatConnectionOnly() async throws {
        let rig = try start()
        defer { rig.stop() }
        let plain = try await rig.probe(["mode": "plain", "text": "GET / HTTP/1.1\r\nHost: h\r\n\r\n"])
        #expect(plain["closed"] as? Bool == true)
        let untrusting = try await rig.probe(["mode": "handshake", "ca": NSNull()])
        #expect(untrusting["authorized"] as? Bool == false)

        let after = try await rig.probe(["mode": "h2", "requests": [["path": "/fine"]]])
        #expect(TLSProbe.responses(after).map(\.status) == [200])
        #expect(rig.server.statistics.handshakeFailures >= 1)
    }
}

/// HTTP/2 frames a test writes itself (through `tls-probe.js`'s `frames` mode), for what node's client will not do:
/// stall a header block, reset a stream in the same write that ends it, withhold its window.
private enum H2 {
    enum FrameType: UInt8 {
        case data = 0, headers = 1, rstStream = 3, settings = 4, continuation = 9
    }

    static let endStream: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4
    static let noError = 0, refusedStream = 7, cancel = 8

    /// The client connection preface: the magic and a SETTINGS frame.
    static func preface(settings: [(id: UInt16, value: UInt32)] = []) -> [UInt8] {
        let payload = settings.flatMap { bigEndian($0.id) + bigEndian($0.value) }
        return Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(.settings, stream: 0, payload)
    }

    static var preface: [UInt8] { preface() }

    static func frame(_ type: FrameType, flags: UInt8 = 0, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        Array(bigEndian(UInt32(payload.count)).dropFirst()) + [type.rawValue, flags] + bigEndian(stream) + payload
    }

    /// A request's HEADERS in HPACK of the static table and literals (no Huffman); `endHeaders: false` sends the
    /// first half of the block alone.
    static func headers(
        _ stream: UInt32, method: String = "GET", path: String, contentLength: Int? = nil, endStream: Bool,
        endHeaders: Bool = true
    ) -> [UInt8] {
        var block: [UInt8] = [method == "POST" ? 0x83 : 0x82, 0x87]  // :method, :scheme https
        block += literal(index: 4, path)  // :path
        block += literal(index: 1, "127.0.0.1")  // :authority
        if let contentLength { block += literal(index: 28, String(contentLength)) }
        var flags: UInt8 = endStream ? Self.endStream : 0
        if endHeaders {
            flags |= Self.endHeaders
        } else {
            block = Array(block.prefix(block.count / 2))
        }
        return frame(.headers, flags: flags, stream: stream, block)
    }

    static func code(_ code: Int) -> [UInt8] { bigEndian(UInt32(code)) }

    static func hex(_ parts: [UInt8]...) -> String {
        parts.joined().map { String(format: "%02x", $0) }.joined()
    }

    /// A literal field with incremental indexing whose name is static-table entry `index`.
    private static func literal(index: UInt8, _ value: String) -> [UInt8] {
        [0x40 | index, UInt8(value.utf8.count)] + Array(value.utf8)
    }

    private static func bigEndian<Integer: FixedWidthInteger>(_ value: Integer) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// The frames the probe received.
    struct Seen {
        let frames: [[String: Any]]

        init(_ answer: [String: Any]) {
            frames = answer["frames"] as? [[String: Any]] ?? []
        }

        private func on(_ stream: Int) -> [[String: Any]] {
            frames.filter { $0["stream"] as? Int == stream }
        }

        func types(on stream: Int) -> [UInt8] {
            on(stream).compactMap { ($0["type"] as? Int).map(UInt8.init) }
        }

        /// The DATA sent on `stream`, as text.
        func text(on stream: Int) -> String {
            on(stream).compactMap { $0["text"] as? String }.joined()
        }

        /// The error code of `stream`'s RST_STREAM; nil when none came.
        func reset(_ stream: Int) -> Int? {
            on(stream).first { $0["type"] as? Int == Int(FrameType.rstStream.rawValue) }?["code"] as? Int
        }
    }
}
