import APNsSimulator
import FCMLegacySimulator
import FCMSimulator
import FCMV1Simulator
import Foundation
import HMSSimulator
import Testing
import WebPushSimulator

/// `herald fcm-sim` flags and help: the shell's, and every side's (in the list's order, as the command gives them).
@Suite struct ConfigurationTests {
    typealias Configuration = FCMSimulator.Configuration
    static let sides: [any SimulatorSide.Type] = [
        FCMV1Simulator.self, FCMLegacySimulator.self, APNsSimulator.self, WebPushSimulator.self, HMSSimulator.self,
    ]
    static let help = FCMSimulator.help(sides: sides)

    func parse(arguments: [String]) throws -> FCMSimulator {
        try FCMSimulator.parse(arguments: arguments, sides: Self.sides)
    }

    @Test func noFlagsGiveTheDefaults() throws {
        let configuration = try parse(arguments: ["--listen", "127.0.0.1:8700"]).configuration
        #expect(configuration == Configuration())
        #expect(configuration.failStatus == 503)
        #expect(configuration.retryAfter == nil)
        #expect(configuration.requestLogLimit == 10_000)
    }

    @Test func everyFlagIsRead() throws {
        let simulator = try parse(arguments: [
            "--listen", "127.0.0.1:0", "--server-key", "secret", "--fail-rate", "0.25", "--fail-status", "500",
            "--retry-after", "2", "--unauthorized-rate", "0.1", "--slow-rate", "1", "--slow-ms", "250",
            "--drop-rate", "0", "--alias", "8=unavail-1-8", "--alias", "23=canon-23-to-32", "--seed=7",
        ])
        #expect(simulator.side(FCMLegacySimulator.self)?.serverKey == "secret")
        #expect(simulator.configuration == Configuration(
            aliases: ["8": "unavail-1-8", "23": "canon-23-to-32"], failRate: 0.25,
            failStatus: 500, retryAfter: .seconds(2), unauthorizedRate: 0.1, slowRate: 1, slowMilliseconds: 250,
            dropRate: 0, seed: 7))
    }

    @Test(arguments: [
        (["--retry-after", "5"], FCMSimulator.RetryAfter.seconds(5)),
        (["--retry-after-date"], .date(secondsFromNow: 1)),
        (["--retry-after-date", "--retry-after", "5"], .date(secondsFromNow: 5)),
        (["--retry-after=5", "--retry-after-date"], .date(secondsFromNow: 5)),
    ])
    func retryAfterFlags(arguments: [String], retryAfter: FCMSimulator.RetryAfter) throws {
        #expect(try parse(arguments: arguments).configuration.retryAfter == retryAfter)
    }

    @Test func theTLSFlagsMakeAnHTTPSListener() throws {
        #expect(try parse(arguments: ["--listen", "127.0.0.1:0"]).configuration.tls == nil, "cleartext only")
        let selfSigned = try parse(arguments: ["--tls-listen", "127.0.0.1:0", "--tls-cert-out=ca.pem"]).configuration
        #expect(selfSigned.tls == FCMSimulator.TLSListener(
            address: .tcp(host: "127.0.0.1", port: 0), certificateOut: "ca.pem", maxConcurrentStreams: 1000))
        let given = try parse(arguments: [
            "--tls-listen", "[::1]:8443", "--tls-cert", "cert.pem", "--tls-key", "key.pem",
            "--max-concurrent-streams", "100",
        ]).configuration
        #expect(given.tls == FCMSimulator.TLSListener(
            address: .tcp(host: "::1", port: 8443), certificateFile: "cert.pem", keyFile: "key.pem",
            maxConcurrentStreams: 100))
    }

    /// HMS Push Kit's side accepts only the client named, its secret read without the whitespace around it.
    @Test func theHMSFlagsNameItsClient() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hms-\(UUID().uuidString)").path
        try "  s3cret\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let account = try parse(arguments: ["--hms-app-id", "10000001", "--hms-client-secret-file", file])
            .side(HMSSimulator.self)?.account
        #expect(account?.appID == "10000001")
        #expect(account?.clientID == "10000001")
        #expect(account?.clientSecret == "s3cret")
        #expect(try parse(arguments: []).side(HMSSimulator.self)?.account == nil)
    }

    @Test func anAliasMayMapATokenContainingEquals() throws {
        let configuration = try parse(arguments: ["--alias", "a=notreg-a=b"]).configuration
        #expect(configuration.aliases == ["a": "notreg-a=b"])
    }

    @Test(arguments: [
        (["--fail-rate", "1.5"], "--fail-rate"),
        (["--fail-rate", "-0.1"], "--fail-rate"),
        (["--fail-rate", "nan"], "--fail-rate"),
        (["--fail-rate"], "--fail-rate"),
        (["--unauthorized-rate", "x"], "--unauthorized-rate"),
        (["--slow-rate", "2"], "--slow-rate"),
        (["--drop-rate", ""], "--drop-rate"),
        (["--fail-status", "404"], "--fail-status"),
        (["--fail-status", "503x"], "--fail-status"),
        (["--retry-after", "-1"], "--retry-after"),
        (["--retry-after", "1.5"], "--retry-after"),
        (["--retry-after-date=3"], "--retry-after-date"),
        (["--slow-ms", "fast"], "--slow-ms"),
        (["--slow-ms", "600001"], "--slow-ms"),
        (["--seed", "-1"], "--seed"),
        (["--server-key", ""], "--server-key"),
        (["--alias", "42"], "--alias"),
        (["--alias", "=notreg-1"], "--alias"),
        (["--alias", "42="], "--alias"),
        (["--alias", "42=notreg-42", "--alias", "42=invalid-42"], "--alias"),
        (["--seed", "1", "--seed", "2"], "--seed"),
        (["--fail-rat", "0.1"], "--fail-rat"),
        (["--tls-listen", "localhost"], "--tls-listen"),
        (["--tls-listen", "unix:/tmp/sim.sock"], "--tls-listen"),
        (["--tls-listen", ""], "--tls-listen"),
        (["--tls-cert", "c.pem", "--tls-key", "k.pem"], "needs --tls-listen"),
        (["--tls-cert-out", "ca.pem"], "needs --tls-listen"),
        (["--max-concurrent-streams", "10"], "needs --tls-listen"),
        (["--tls-listen", "127.0.0.1:0", "--tls-cert", "c.pem"], "--tls-key"),
        (["--tls-listen", "127.0.0.1:0", "--tls-key", "k.pem"], "--tls-cert"),
        (["--tls-listen", "127.0.0.1:0", "--max-concurrent-streams", "0"], "--max-concurrent-streams"),
        (["--tls-listen", "127.0.0.1:0", "--max-concurrent-streams", "2000000"], "--max-concurrent-streams"),
        (["--hms-app-id", "com.example"], "--hms-app-id"),
        (["--hms-app-id", "10000001"], "needs --hms-client-secret-file"),
        (["--hms-client-secret-file", "/nonexistent/hms-secret"], "--hms-client-secret-file"),
        (["extra"], "extra"),
    ])
    func badArgumentsAreRefusedNamingTheCulprit(arguments: [String], culprit: String) {
        #expect {
            try parse(arguments: arguments)
        } throws: { error in
            (error as? Configuration.ArgumentError)?.description.contains(culprit) == true
        }
    }

    @Test(arguments: [
        "--listen", "--server-key", "--fail-rate", "--fail-status", "--retry-after", "--retry-after-date",
        "--unauthorized-rate", "--slow-rate", "--slow-ms", "--drop-rate", "--alias", "--seed",
        "notreg-", "invalid-", "mismatch-", "badpkg-", "unavail-N-", "internal-N-", "ratelimit-N-", "apns-",
        "canon-OLD-to-NEW", "error-CODE-", "/topics/", "/control", "/stats", "fail_next", "unauthorized_next",
        "slow_next", "retry_after_date", "reset", "--tls-listen", "--tls-cert", "--tls-key", "--tls-cert-out",
        "--max-concurrent-streams", "HTTP/2", "InvalidProviderToken", "Unregistered", "--hms-app-id",
        "--hms-client-secret-file", "/oauth2/v3/token", "80100000", "/hms/stats",
    ])
    func helpDescribes(term: String) {
        #expect(Self.help.contains(term))
    }

    @Test func everyFlagInTheHelpIsAccepted() throws {
        let flags = Self.help.split(separator: "\n")
            .filter { $0.hasPrefix("  --") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
            .filter { $0 != "--help" }
        #expect(flags.count == 21)
        let serviceAccount = try V1SimulatorTests.serviceAccountFile()
        defer { try? FileManager.default.removeItem(atPath: serviceAccount) }
        let hmsSecret = serviceAccount + ".hms"
        try "s3cret\n".write(toFile: hmsSecret, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: hmsSecret) }
        for flag in flags {
            let value = [
                "--alias": "a=b", "--fail-status": "500", "--service-account": serviceAccount,
                "--tls-listen": "127.0.0.1:0", "--hms-client-secret-file": hmsSecret,
            ][flag] ?? "1"
            // The HTTPS listener's own flags need it, and a certificate its key; HMS's app id and secret go together.
            let tls = flag.hasPrefix("--tls-") || flag == "--max-concurrent-streams"
            let companions = flag == "--hms-app-id" ? ["--hms-client-secret-file", hmsSecret]
                : flag == "--hms-client-secret-file" ? ["--hms-app-id", "10000001"]
                : !tls || flag == "--tls-listen" ? []
                : flag == "--tls-cert" ? ["--tls-listen", "127.0.0.1:0", "--tls-key", "k.pem"]
                : flag == "--tls-key" ? ["--tls-listen", "127.0.0.1:0", "--tls-cert", "c.pem"]
                : ["--tls-listen", "127.0.0.1:0"]
            let arguments = (flag == "--retry-after-date" ? [flag] : [flag, value]) + companions
            #expect(throws: Never.self, "\(flag)") { try parse(arguments: arguments) }
        }
    }
}
