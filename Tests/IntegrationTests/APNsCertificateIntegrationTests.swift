import Foundation
import NetworkTestSupport
import Storage
import Testing

/// APNs with a certificate (SPEC §22): the real `herald serve` with certificate apps sending to
/// `scripts/apns-h2-standin.js --client-ca`, whose TLS handshake requires a client certificate issued by a CA made
/// for the run. A `.p12` (with a password) and a PEM certificate with its key get through, with no `authorization`
/// header; a certificate the CA did not issue is refused at the handshake, so its app's pushes fail as transport
/// failures and are never delivered. `status` and the overview show the certificates' expiry and fingerprint, and
/// the secrets key's id.
@Suite(.serialized) struct APNsCertificateIntegrationTests {
    static let topic = "com.example.app"

    /// A CA, a client certificate it issued (`client.pem`, `client.key`, and both in `client.p12` under
    /// `password`), and a self-signed one it did not (`rogue.pem`, `rogue.key`), made by the `openssl` command.
    struct Certificates {
        let directory: URL
        let password = "correct horse"
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        init(in directory: URL) throws {
            self.directory = directory
            let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            let subject = "/UID=\(APNsCertificateIntegrationTests.topic)/CN=Apple Push Services: "
                + APNsCertificateIntegrationTests.topic
            try OpenSSLCommand.run(["req", "-x509"] + ec + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Test APNs CA"], in: directory)
            try OpenSSLCommand.run(["req"] + ec + [
                "-keyout", "client.key", "-out", "client.csr", "-subj", subject], in: directory)
            try OpenSSLCommand.run([
                "x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "client.pem", "-days", "2"], in: directory)
            try OpenSSLCommand.run([
                "pkcs12", "-export", "-inkey", "client.key", "-in", "client.pem", "-out", "client.p12",
                "-passout", "pass:\(password)"], in: directory)
            try OpenSSLCommand.run(["req", "-x509"] + ec + [
                "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2", "-subj", "/UID=rogue/CN=rogue"],
                in: directory)
            try (password + "\n").write(toFile: path("password"), atomically: true, encoding: .utf8)
            for name in ["ca.key", "client.key", "client.p12", "rogue.key", "password"] { chmod(path(name), 0o600) }
        }
    }

    @Test func certificateAppsReachAServerThatRequiresTheirCertificateAndOthersDoNot() async throws {
        let directory = HeraldProcess.makeDirectory()
        let certificates = try Certificates(in: directory)
        let standIn = try H2StandIn(
            ["--client-ca", certificates.path("ca.pem"), "--delay-ms", "5"], script: "scripts/apns-h2-standin.js")
        let endpoint = "https://127.0.0.1:\(standIn.port)"
        let secretsKey = certificates.path("secrets.key")
        let made = try runHerald(["secrets-key", "--out", secretsKey, "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        let keyID = try #require(
            (try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])?["key_id"] as? String)
        let config = certificates.path("herald.json")
        try """
            {"secrets_key_file": "secrets.key", "apps": [
              {"name": "ios", "provider": "apns", "topic": "\(Self.topic)", "endpoint": "\(endpoint)",
               "certificate_file": "client.p12", "certificate_password_file": "password"},
              {"name": "ios-pem", "provider": "apns", "topic": "\(Self.topic)", "endpoint": "\(endpoint)",
               "certificate_file": "client.pem", "certificate_key_file": "client.key"},
              {"name": "rogue", "provider": "apns", "topic": "\(Self.topic)", "endpoint": "\(endpoint)",
               "certificate_file": "rogue.pem", "certificate_key_file": "rogue.key"}]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(
            directory: directory, arguments: ["--config", config], environment: ["SSL_CERT_FILE": standIn.caFile])
        defer { herald.stop() }

        for app in ["ios", "ios-pem", "rogue"] {
            let reply = try await herald.request(
                "POST", "/v1/messages", body: #"{"app":"\#(app)","tokens":["\#(app)-1","\#(app)-2"],"#
                    + #""message":{"notification":{"title":"Hi"}}}"#)
            #expect(reply.status == 202, "\(reply.text)")
        }
        // The good apps' deliveries end delivered; the rogue's have been tried (a reason) and are still waiting.
        var rows: [String: (state: String, reason: String?)] = [:]
        for _ in 0..<300 {
            let connection = try Connection(path: herald.databasePath, mode: .readOnly)
            rows = Dictionary(uniqueKeysWithValues: try connection.query(
                "SELECT token, state, reason FROM deliveries") { ($0.string(0), ($0.string(1), $0.optionalString(2))) })
            let good = rows.filter { !$0.key.hasPrefix("rogue") }
            let rogue = rows.filter { $0.key.hasPrefix("rogue") }
            if good.count == 4, good.values.allSatisfy({ $0.state == "delivered" }), rogue.count == 2,
               rogue.values.allSatisfy({ $0.reason != nil }) {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        for token in ["ios-1", "ios-2", "ios-pem-1", "ios-pem-2"] {
            #expect(rows[token]?.state == "delivered", "\(token): \(String(describing: rows[token]))")
        }
        for token in ["rogue-1", "rogue-2"] {
            let refused = rows[token]?.reason?.hasPrefix("the server closed the connection before HTTP/2 began")
            #expect(rows[token]?.state != "delivered" && refused == true,
                    "\(token) fails at once as a transport failure: \(String(describing: rows[token]))")
        }
        let stats = try await standIn.statsObject()
        #expect(stats["requests"] as? Int == 4, "only the certificate the CA issued gets a request through")
        #expect(stats["authorization_headers"] as? Int == 0, "no provider token beside a certificate")
        let clients = stats["client_certificates"] as? [String: Int] ?? [:]
        #expect(Set(clients.keys) == [Self.topic], "\(clients)")

        // The certificates' expiry and fingerprint, and the secrets key's id: in the overview and in `status`.
        let overview = try await herald.request("GET", "/v1/admin/overview").json
        #expect(overview["secrets_key_id"] as? String == keyID)
        let apps = overview["apps"] as? [[String: Any]] ?? []
        let ios = try #require(apps.first { $0["app"] as? String == "ios" }?["certificate"] as? [String: Any])
        let expiresAt = try #require(ios["expires_at"] as? Int)
        #expect(expiresAt > Int(Date().timeIntervalSince1970 * 1000))
        #expect((ios["sha256"] as? String)?.count == 64)
        #expect((ios["subject"] as? String)?.hasSuffix(Self.topic) == true)
        let status = try runHerald(
            ["status", "--db", herald.databasePath, "--config", config, "--json"], directory: directory)
        #expect(status.status == 0, "\(status.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(json["secrets_key_id"] as? String == keyID)
        let statusApps = json["apps"] as? [[String: Any]] ?? []
        let statusIOS = statusApps.first { $0["app"] as? String == "ios" }?["certificate"] as? [String: Any]
        #expect(statusIOS?["expires_at"] as? Int == expiresAt)
        #expect(statusIOS?["sha256"] as? String == ios["sha256"] as? String)
        let text = try runHerald(["status", "--db", herald.databasePath, "--config", config], directory: directory)
        #expect(text.stdout.contains("secrets key: id \(keyID)"), "\(text.stdout)")
        #expect(text.stdout.contains("ios: APNs certificate"), "\(text.stdout)")
        #expect(herald.log.contains("the APNs certificate expires soon"), "a certificate of 2 days is warned about")
        // No secret in the log: neither the password nor the secrets key.
        let keyText = try String(contentsOfFile: secretsKey, encoding: .utf8).split(separator: "\n")[1]
        #expect(!herald.log.contains(certificates.password) && !herald.log.contains(keyText))
    }

    /// An APNs app's certificate that cannot work is refused at start, saying what to fix, and never quoting a
    /// password.
    @Test func aCertificateThatCannotWorkIsRefusedAtStart() throws {
        let directory = HeraldProcess.makeDirectory()
        let certificates = try Certificates(in: directory)
        // Expired in 2020: `openssl ca` takes explicit dates.
        try "[ca]\ndefault_ca = d\n[d]\ndatabase = index\nnew_certs_dir = .\nserial = serial\ndefault_md = sha256\n"
            .appending("policy = p\n[p]\ncommonName = supplied\n")
            .write(toFile: certificates.path("ca.cnf"), atomically: true, encoding: .utf8)
        try "".write(toFile: certificates.path("index"), atomically: true, encoding: .utf8)
        try "01\n".write(toFile: certificates.path("serial"), atomically: true, encoding: .utf8)
        try OpenSSLCommand.run([
            "ca", "-batch", "-config", "ca.cnf", "-selfsign", "-keyfile", "client.key", "-in", "client.csr",
            "-out", "expired.pem", "-startdate", "20200101000000Z", "-enddate", "20200201000000Z"], in: directory)
        let wrongPassword = "not the password 7f3a"
        try wrongPassword.write(toFile: certificates.path("wrong"), atomically: true, encoding: .utf8)
        let app = #""name":"ios","provider":"apns","topic":"\#(Self.topic)""#
        let cases: [(app: String, says: String)] = [
            (#"{\#(app),"certificate_file":"client.p12","key_file":"k.p8","key_id":"ABC123DEFG","team_id":"T"}"#,
             #"give either "certificate_file" (a certificate) or "key_file""#),
            (#"{\#(app)}"#, #"needs "key_file", "key_id" and "team_id" (a .p8 signing key) or "certificate_file""#),
            (#"{\#(app),"certificate_password_file":"password"}"#, #"need "certificate_file""#),
            (#"{\#(app),"certificate_file":"client.p12","certificate_password_file":"wrong"}"#,
             "the password is wrong"),
            (#"{\#(app),"certificate_file":"client.p12"}"#, "the password is wrong"),
            (#"{\#(app),"certificate_file":"client.pem","certificate_key_file":"rogue.key"}"#,
             "the private key does not belong to the certificate"),
            (#"{\#(app),"certificate_file":"client.pem"}"#, "no unencrypted PEM private key"),
            (#"{\#(app),"certificate_file":"client.pem","certificate_key_file":"client.key","#
                + #""certificate_password_file":"password"}"#, #""certificate_password_file" is for a .p12 file"#),
            (#"{\#(app),"certificate_file":"client.p12","certificate_key_file":"client.key"}"#,
             #""certificate_key_file" is for a PEM certificate"#),
            (#"{\#(app),"certificate_file":"expired.pem","certificate_key_file":"client.key"}"#,
             "expired 2020-02-01T00:00:00Z"),
            (#"{\#(app),"certificate_file":"missing.p12"}"#, "cannot read certificate file"),
        ]
        for (app, says) in cases {
            let config = certificates.path("herald.json")
            try #"{"apps": [\#(app)]}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let run = try runHerald(["serve", "--config", config, "--db", certificates.path("h.db")])
            #expect(run.status != 0, "\(app)")
            #expect(run.stderr.contains(says), "\(app) → \(run.stderr)")
            #expect(!run.stderr.contains(wrongPassword) && !run.stderr.contains(certificates.password))
        }
    }
}
