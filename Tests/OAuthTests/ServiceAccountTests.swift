import Foundation
import Support
import Testing

@testable import OAuth

@Suite struct ServiceAccountTests {
    static let pem = testKey.pkcs8PEM()

    func json(_ members: [(String, JSON)]) -> [UInt8] {
        Array(JSON(members: members).serialized().utf8)
    }

    var complete: [(String, JSON)] {
        [
            ("type", "service_account"), ("project_id", "test-project"), ("private_key_id", "abc"),
            ("private_key", .string(Self.pem)), ("client_email", "herald@test-project.iam.gserviceaccount.com"),
            ("token_uri", "https://oauth2.googleapis.com/token"),
        ]
    }

    func problem(_ bytes: [UInt8]) -> String? {
        do {
            _ = try ServiceAccount(json: bytes, source: "sa.json")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func aCompleteKeyFileIsRead() throws {
        let account = try ServiceAccount(json: json(complete))
        #expect(account.clientEmail == "herald@test-project.iam.gserviceaccount.com")
        #expect(account.projectID == "test-project")
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.privateKey.bits == 2048)
        // What it signs verifies with the key it was written with.
        let claims = JWT.Claims(issuer: "i", scope: "s", audience: "a", issuedAt: 1, lifetime: 60)
        #expect(throws: Never.self) {
            try JWT.verify(try JWT.sign(claims, with: account.privateKey), with: testKey.publicKey)
        }
    }

    @Test func projectAndTokenURIMayBeLeftToTheConfiguration() throws {
        let account = try ServiceAccount(json: json(complete.filter { $0.0 != "project_id" && $0.0 != "token_uri" }))
        #expect(account.projectID == nil)
        #expect(account.tokenURI == nil)
    }

    @Test func eachProblemIsNamed() {
        #expect(problem(Array("{".utf8))?.hasPrefix("sa.json is not JSON: ") == true)
        #expect(problem(Array("[]".utf8)) == "sa.json must hold a JSON object")
        #expect(problem(json(complete.filter { $0.0 != "client_email" })) == #"sa.json has no "client_email""#)
        #expect(problem(json(complete.filter { $0.0 != "private_key" })) == #"sa.json has no "private_key""#)
        #expect(problem(json(complete.map { $0.0 == "client_email" ? ($0.0, .int(1)) : $0 }))
            == #"sa.json: "client_email" must be a non-empty string"#)
        #expect(problem(json(complete.map { $0.0 == "type" ? ($0.0, "authorized_user") : $0 }))?
            .hasPrefix(#"sa.json has "type" "authorized_user": Herald needs a "service_account" key"#) == true)
        #expect(problem(json(complete.map { $0.0 == "token_uri" ? ($0.0, "ftp://x") : $0 }))
            == #"sa.json: "token_uri" must be an http(s) URL, got "ftp://x""#)
        let garbled = problem(json(complete.map {
            $0.0 == "private_key" ? ($0.0, "-----BEGIN PRIVATE KEY-----\nAAAA\n") : $0
        }))
        #expect(garbled?.hasPrefix(#"sa.json: "private_key" cannot be used: not a PEM private key"#) == true,
                "\(garbled ?? "")")
    }

    @Test func unreadableFilesSayWhy() {
        #expect(throws: ServiceAccount.Invalid(
            "cannot read service account file /nonexistent/sa.json: No such file or directory")
        ) { try ServiceAccount(contentsOf: "/nonexistent/sa.json") }
        #expect(throws: ServiceAccount.Invalid("cannot read service account file /tmp: Is a directory")) {
            try ServiceAccount(contentsOf: "/tmp")
        }
    }

    @Test func thePrivateKeyNeverAppearsInDescriptionsOrErrors() throws {
        let account = try ServiceAccount(json: json(complete))
        let body = Self.pem.split(separator: "\n")[1]
        #expect(!"\(account)".contains(body))
        #expect(!"\(account.privateKey)".contains(body))
        // A key that is almost right (one line cut) must not be quoted back in the refusal.
        var lines = Self.pem.split(separator: "\n").map(String.init)
        lines.remove(at: 3)
        let broken = problem(json(complete.map {
            $0.0 == "private_key" ? ($0.0, .string(lines.joined(separator: "\n"))) : $0
        }))
        #expect(broken != nil)
        #expect(!(broken ?? "").contains(lines[1]))
    }

    @Test func onlyRSAPrivateKeysAreAccepted() throws {
        #expect(try RSAPrivateKey(pem: Self.pem).bits == 2048)
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: "not a key") }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: testKey.publicKey.pem()) }
    }
}
