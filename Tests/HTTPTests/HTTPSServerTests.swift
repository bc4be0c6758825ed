import Foundation
import HTTP
import NetworkTestSupport
import Testing

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
        _ handler: TestHandler = Self.describing, identity: TLSIdentity? = nil, streams: Int = 1000
    ) throws -> Rig {
        let identity = try identity ?? TLSIdentity.selfSigned(names: ["127.0.0.1", "localhost"])
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("https-\(UUID()).pem").path
        try identity.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        let server = HTTPSServer(
            configuration: HTTPSServerConfiguration(
                address: .tcp(host: "127.0.0.1", port: 0), identity: identity, maxConcurrentStreams: streams),
            handler: handler)
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
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("https-files-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificateFile = directory.appendingPathComponent("cert.pem").path
        let keyFile = directory.appendingPathComponent("key.pem").path
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
