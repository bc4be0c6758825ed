import Foundation
import NetworkTestSupport
import Testing

/// The real `herald fcm-sim --tls-listen`: HTTPS (HTTP/2) beside its cleartext listener on ephemeral loopback ports,
/// probed by node's TLS and HTTP/2 clients trusting the certificate it wrote out.
@Suite struct SimulatorTLSIntegrationTests {
    @Test func fcmSimServesHTTP2OverTLSBesideCleartext() async throws {
        let directory = HeraldProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appendingPathComponent("sim.pem").path
        let simulator = try SimulatorProcess([
            "--tls-listen", "127.0.0.1:0", "--tls-cert-out", caFile, "--max-concurrent-streams", "50",
        ])
        defer { simulator.process.terminate() }
        let address = try #require(simulator.announcement["tls_address"] as? String)
        #expect(simulator.announcement["https_endpoint"] as? String == "https://" + address)
        let port = try #require(Int(address.split(separator: ":").last ?? ""))
        #expect(port != 0, "the bound port, not the 0 asked for")

        let handshake = try await TLSProbe.run(["mode": "handshake", "port": port, "ca": caFile])
        #expect(handshake["authorized"] as? Bool == true, "the written certificate verifies: \(handshake)")
        #expect(handshake["alpn"] as? String == "h2")

        let answer = try await TLSProbe.run(["mode": "h2", "port": port, "ca": caFile, "requests": [
            [
                "method": "POST", "path": "/fcm/send", "body": #"{"to":"ok-1"}"#,
                "headers": ["authorization": "key=any", "content-type": "application/json"],
            ],
            [
                "method": "POST", "path": "/3/device/ipad-1", "body": #"{"aps":{}}"#,
                "headers": ["authorization": "bearer not-a-jwt", "apns-topic": "com.example.app"],
            ],
        ]])
        #expect((answer["settings"] as? [String: Any])?["maxConcurrentStreams"] as? Int == 50)
        let responses = TLSProbe.responses(answer)
        #expect(responses.map(\.status) == [200, 403])
        #expect(responses.last?.body.contains("InvalidProviderToken") == true, "no APNs key: every token refused")

        // The cleartext listener is the same simulator: it saw both, over HTTP/2.
        let requests = try await simulator.requests()
        #expect(requests.map { $0["http"] as? String } == ["HTTP/2", "HTTP/2"])
    }

    @Test func badTLSFlagsAreRefusedSayingWhy() throws {
        let alone = try runHerald(["fcm-sim", "--listen", "127.0.0.1:0", "--tls-cert", "cert.pem"])
        #expect(alone.status == 2)
        #expect(alone.stderr.contains("--tls-cert needs --tls-listen"), "\(alone.stderr)")

        let missing = try runHerald([
            "fcm-sim", "--listen", "127.0.0.1:0", "--tls-listen", "127.0.0.1:0", "--tls-cert", "/nonexistent/c.pem",
            "--tls-key", "/nonexistent/k.pem",
        ])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot read the TLS certificate file /nonexistent/c.pem"), "\(missing.stderr)")
    }
}
