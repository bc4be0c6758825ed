import APNsSimulator
import FCMSimulator
import FCMV1Simulator
import Foundation
import HTTP
import NetworkTestSupport
import OAuth
import Send
import Support
import Testing
import TestSupport

/// The simulator over real TLS on an ephemeral loopback port (`serveTLS`), reached as Herald reaches Apple: Herald's
/// own `HTTP2ClientPool` trusting the certificate the simulator wrote out, and node's TLS and HTTP/2 clients
/// (`TLSProbe`) for what Herald's client does not do (HTTP/1.1 over TLS, ALPN without h2, looking at the certificate).
@Suite struct TLSSimulatorTests {
    static let keyID = "SIMKEY0001"
    static let teamID = "SIMTEAM001"
    static let key = try! P256PrivateKey.generate()

    struct Rig {
        let simulator: FCMSimulator
        let front: FCMSimulator.TLSFront
        let caFile: String
        let pool: HTTP2ClientPool

        var port: Int {
            guard case .tcp(_, let port) = front.address else { return 0 }
            return port
        }

        func stop() {
            pool.shutdown(gracePeriod: 0)
            front.server.shutdown(gracePeriod: 1)
            try? FileManager.default.removeItem(atPath: caFile)
        }

        func probe(_ input: [String: Any]) async throws -> [String: Any] {
            var input = input
            input["port"] = port
            input["ca"] = caFile
            return try await TLSProbe.run(input)
        }
    }

    /// The simulator trusting `key` for APNs, behind TLS with a self-signed certificate written to a file, and a pool
    /// of Herald's that trusts only that file.
    func start(streams: Int = 1000, v1: FCMV1Simulator = FCMV1Simulator()) throws -> Rig {
        let apns = APNsSimulator(account: .init(
            publicKeyPEM: Self.key.publicKey.pem(), keyID: Self.keyID, teamID: Self.teamID))
        let simulator = FCMSimulator.everySide(v1: v1, apns: apns)
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID()).pem").path
        let front = try simulator.serveTLS(.init(
            address: .tcp(host: "127.0.0.1", port: 0), certificateOut: caFile, maxConcurrentStreams: streams))
        let pool = HTTP2ClientPool(maxConnectionsPerHost: 1, http1Connections: 1, name: "sim-tls", caFile: caFile)
        return Rig(simulator: simulator, front: front, caFile: caFile, pool: pool)
    }

    static func providerToken(key: P256PrivateKey = key, keyID: String = keyID) throws -> String {
        try JWT.signES256(
            header: [("kid", .string(keyID))],
            claims: .object([("iss", .string(teamID)), ("iat", .int(Clock.nowMillis() / 1000))]), with: key)
    }

    static func apnsRequest(_ rig: Rig, device: String, id: String, jwt: String) -> OutboundRequest {
        OutboundRequest(
            url: rig.front.baseURL + "/3/device/" + device,
            headers: [
                ("authorization", "bearer " + jwt), ("apns-id", id), ("apns-topic", "com.example.app"),
                ("apns-push-type", "alert"),
            ],
            body: Array(#"{"aps":{"alert":{"title":"Hi"}}}"#.utf8))
    }

    static func send(_ pool: HTTP2ClientPool, _ request: OutboundRequest) async -> TransportResult {
        await withCheckedContinuation { continuation in
            pool.submit(request) { result, _ in continuation.resume(returning: result) }
        }
    }

    // MARK: - APNs over TLS and HTTP/2 (SPEC §15)

    @Test func apnsIsAnsweredAsAppleAnswersOverTLSAndHTTP2() async throws {
        let rig = try start()
        defer { rig.stop() }
        let jwt = try Self.providerToken()
        let id = "6F1C8A3E-0D0B-4C4E-9A8D-6E4F2B7C1D00"

        let delivered = await Self.send(rig.pool, Self.apnsRequest(rig, device: "ipad-1", id: id, jwt: jwt))
        guard case .response(200, let headers, let body, let version) = delivered else {
            Issue.record("delivered: \(delivered)")
            return
        }
        #expect(version == "2", "Herald's client spoke HTTP/2 to it")
        #expect(headers.first { $0.name == "apns-id" }?.value == id)
        #expect(body.isEmpty)

        let before = Clock.nowMillis()
        let unregistered = await Self.send(rig.pool, Self.apnsRequest(rig, device: "notreg-ipad", id: id, jwt: jwt))
        guard case .response(410, _, let goneBody, "2") = unregistered else {
            Issue.record("unregistered: \(unregistered)")
            return
        }
        let gone = try JSON.parse(goneBody)
        #expect(gone["reason"]?.stringValue == "Unregistered")
        #expect((gone["timestamp"]?.int64Value ?? 0) >= before, "Apple's timestamp of the unregistration, in ms")

        let otherKey = try P256PrivateKey.generate()
        let forged = await Self.send(
            rig.pool, Self.apnsRequest(rig, device: "ipad-1", id: id, jwt: try Self.providerToken(key: otherKey)))
        guard case .response(403, _, let forgedBody, "2") = forged else {
            Issue.record("forged: \(forged)")
            return
        }
        #expect(try JSON.parse(forgedBody)["reason"]?.stringValue == "InvalidProviderToken")
        let wrongKeyID = await Self.send(
            rig.pool, Self.apnsRequest(rig, device: "ipad-1", id: id, jwt: try Self.providerToken(keyID: "OTHERKEY01")))
        #expect(wrongKeyID.status == 403)

        let requests = rig.simulator.stats().requests
        #expect(requests.map(\.to) == ["ipad-1", "notreg-ipad", "ipad-1", "ipad-1"])
        #expect(requests.map(\.status) == [200, 410, 403, 403])
        #expect(requests.allSatisfy { $0.http == .http2 }, "\(requests.map(\.http))")
        let server = rig.front.server.statistics
        #expect(server.http2Connections == 1)
        #expect(server.http1Requests == 0)
    }

    @Test func manyAPNsRequestsAreMultiplexedOnOneConnectionWithinTheAdvertisedLimit() async throws {
        let rig = try start(streams: 40)
        defer { rig.stop() }
        let jwt = try Self.providerToken()
        let count = 300
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                group.addTask {
                    let id = "00000000-0000-4000-8000-\(String(format: "%012d", index))"
                    return await Self.send(rig.pool, Self.apnsRequest(rig, device: "dev-\(index)", id: id, jwt: jwt))
                        .status ?? 0
                }
            }
            var statuses: [Int] = []
            for await status in group { statuses.append(status) }
            return statuses
        }
        #expect(statuses.count == count)
        #expect(statuses.allSatisfy { $0 == 200 }, "none refused: Herald kept to the 40 streams the SETTINGS allowed")
        let server = rig.front.server.statistics
        #expect(server.accepted == 1, "one TCP connection for all of them")
        #expect(server.http2Connections == 1)
        #expect(server.http2Requests == count)
        #expect(rig.simulator.stats().totalRequests == count)
    }

    // MARK: - Every route over TLS

    @Test func fcmLegacyV1AndStatsWorkOverHTTP2() async throws {
        let rig = try start(v1: FCMV1Simulator(account: .init(
            clientEmail: V1SimulatorTests.email, projectID: "test-project",
            publicKeyPEM: V1SimulatorTests.key.publicKey.pem())))
        defer { rig.stop() }
        let tokenURI = "https://127.0.0.1:\(rig.port)/token"
        let now = Clock.nowMillis() / 1000
        let assertion = try JWT.sign(
            JWT.Claims(issuer: V1SimulatorTests.email, scope: JWT.firebaseMessagingScope, audience: tokenURI,
                       issuedAt: now, expiresAt: now + 3600), with: V1SimulatorTests.key)
        let tokenAnswer = try await rig.probe(["mode": "h2", "requests": [[
            "method": "POST", "path": "/token",
            "headers": ["content-type": "application/x-www-form-urlencoded"],
            "body": "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)",
        ]]])
        let token = try #require(TLSProbe.responses(tokenAnswer).first)
        #expect(token.status == 200, "the audience is the https:// URL asked: \(token.body)")
        let accessToken = try JSON.parse(Array(token.body.utf8))["access_token"]?.stringValue ?? ""

        let answer = try await rig.probe(["mode": "h2", "requests": [
            [
                "method": "POST", "path": "/fcm/send",
                "headers": ["authorization": "key=any", "content-type": "application/json"],
                "body": #"{"registration_ids":["ok-1","notreg-2"]}"#,
            ],
            [
                "method": "POST", "path": "/v1/projects/test-project/messages:send",
                "headers": ["authorization": "Bearer \(accessToken)", "content-type": "application/json"],
                "body": #"{"message":{"token":"ok-3","data":{"a":"b"}}}"#,
            ],
        ]])
        let responses = TLSProbe.responses(answer)
        #expect(responses.map(\.status) == [200, 200], "\(responses.map(\.body))")
        let legacy = try JSON.parse(Array((responses.first?.body ?? "").utf8))
        #expect(legacy["success"]?.int64Value == 1)
        #expect(legacy["failure"]?.int64Value == 1)

        let stats = try await rig.probe(["mode": "h2", "requests": [["path": "/stats"]]])
        let recorded = try JSON.parse(Array((TLSProbe.responses(stats).first?.body ?? "").utf8))
        let entries = recorded["requests"]?.arrayValue ?? []
        #expect(entries.map { $0["format"]?.stringValue } == ["json", "v1"])
        #expect(entries.map { $0["http"]?.stringValue } == ["HTTP/2", "HTTP/2"])
    }

    @Test func http1OverTLSReachesTheSimulatorThroughTheParser() async throws {
        let rig = try start()
        defer { rig.stop() }
        let body = #"{"to":"ok-1"}"#
        let text = "POST /fcm/send HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: key=k\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let answer = try await rig.probe(["mode": "raw", "alpn": ["http/1.1"], "text": text])
        #expect(answer["alpn"] as? String == "http/1.1")
        let reply = answer["reply"] as? String ?? ""
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(reply)")
        #expect(reply.contains(#""success":1"#))
        #expect(rig.simulator.stats().requests.map(\.http) == [.http1_1])
        #expect(rig.front.server.statistics.http1Requests == 1)
    }

    // MARK: - The certificate

    @Test func theWrittenCertificateIsTheOneServedAndNamesLoopback() async throws {
        let rig = try start()
        defer { rig.stop() }
        #expect(try String(contentsOfFile: rig.caFile, encoding: .utf8) == rig.front.certificatePEM)
        let certificate = try await rig.probe(["mode": "cert"])
        #expect(certificate["ip127"] as? Bool == true, "\(certificate)")
        #expect(certificate["localhost"] as? Bool == true)
        let handshake = try await rig.probe(["mode": "handshake"])
        #expect(handshake["authorized"] as? Bool == true, "verified against the written PEM: \(handshake)")
        #expect(handshake["alpn"] as? String == "h2")
        #expect((handshake["subjectaltname"] as? String ?? "").contains("IP Address:127.0.0.1"))
    }

    @Test func givenCertificateFilesAreServedAndWrittenOut() async throws {
        let identity = try TLSIdentity.selfSigned(names: ["127.0.0.1"])
        let directory = TemporaryDirectory(prefix: "sim-files")
        let (certificateFile, keyFile, out) = (
            directory.path("cert.pem"), directory.path("key.pem"),
            directory.path("out.pem"))
        try identity.certificatePEM.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        try identity.privateKeyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)

        let simulator = FCMSimulator.everySide()
        let front = try simulator.serveTLS(.init(
            address: .tcp(host: "127.0.0.1", port: 0), certificateFile: certificateFile, keyFile: keyFile,
            certificateOut: out))
        defer { front.server.shutdown(gracePeriod: 1) }
        #expect(try String(contentsOfFile: out, encoding: .utf8) == identity.certificatePEM)
        guard case .tcp(_, let port) = front.address else { return }
        let handshake = try await TLSProbe.run(["mode": "handshake", "port": port, "ca": certificateFile])
        #expect(handshake["authorized"] as? Bool == true, "\(handshake)")

        #expect {
            _ = try simulator.serveTLS(.init(
                address: .tcp(host: "127.0.0.1", port: 0), certificateFile: directory.path("missing.pem"),
                keyFile: keyFile))
        } throws: { error in
            "\(error)".contains("cannot read the TLS certificate file")
        }
    }
}

extension TransportResult {
    var status: Int? {
        guard case .response(let status, _, _, _) = self else { return nil }
        return status
    }
}
