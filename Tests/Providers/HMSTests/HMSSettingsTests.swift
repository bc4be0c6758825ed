import Foundation
import Ingest
import ProviderKit
import Queue
import Support
import TestSupport
import Testing

@testable import HMS

/// An `apps` entry of an HMS app as the list reads it (SPEC §21): what is refused at start, the secret read at
/// `load`, and what ingest refuses for it.
@Suite struct HMSSettingsTests {
    let directory = TemporaryDirectory(prefix: "herald-hms")

    private func settings(_ members: [(key: String, value: JSON)]) throws(ConfigurationError) -> HMSSettings {
        try HMSSettings(AppEntry(json: .object(members), app: "huawei", directory: directory.url.path))
    }

    private func refusal(_ members: [(key: String, value: JSON)]) -> String? {
        do {
            let settings = try settings(members)
            try settings.check(app: "huawei")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func anEntryNeedsItsAppIDAndSecretFileAndTakesTheirDefaults() throws {
        #expect(refusal([("client_secret_file", "s")]) == #"HMS app "huawei" needs "app_id""#)
        #expect(refusal([("app_id", "10000001")]) == #"HMS app "huawei" needs "client_secret_file""#)
        #expect(refusal([("app_id", "com.example"), ("client_secret_file", "s")])?.contains("digits") == true)
        #expect(refusal([("app_id", "1"), ("client_secret_file", "s"), ("token_uri", "ftp://x")])?
            .contains(#""token_uri" must be an http(s) URL"#) == true)
        #expect(refusal([("app_id", "1"), ("client_secret_file", "s"), ("endpoint", "huawei")])?
            .contains(#""endpoint" must be an http(s) URL"#) == true)

        let entry = try settings([("app_id", "10000001"), ("client_secret_file", "secret.txt")])
        #expect(entry.clientID == "10000001")
        #expect(entry.clientSecretSource?.place == directory.path("secret.txt"))
        #expect(entry.endpoint == HMSSettings.defaultEndpoint)
        #expect(entry.tokenURI == HMSSettings.defaultTokenURI)
    }

    /// The secret without the whitespace around it; an unreadable or empty file is refused without quoting it.
    @Test func loadReadsTheSecretAndSaysWhatIsWrong() throws {
        var entry = try settings([("app_id", "10000001"), ("client_secret_file", "secret.txt")])
        #expect(throws: ConfigurationError.self) { try entry.load(app: "huawei") }
        try "  s3cret\n".write(toFile: directory.path("secret.txt"), atomically: true, encoding: .utf8)
        try entry.load(app: "huawei")
        #expect(entry.clientSecret == "s3cret")

        try "s3cret\nmore\n".write(toFile: directory.path("secret.txt"), atomically: true, encoding: .utf8)
        var twoLines = try settings([("app_id", "10000001"), ("client_secret_file", "secret.txt")])
        do {
            try twoLines.load(app: "huawei")
            Issue.record("two lines were taken as a secret")
        } catch {
            #expect(error.description.contains("one line"))
            #expect(!error.description.contains("s3cret"))
        }
    }

    @Test func ingestRefusesAFirebaseInstallationIDButNotTokensTopicsOrConditions() {
        let addressing = HMSDefinition().sandboxApp?.settings.addressing
        let fid = IncomingMessage(app: "hms", target: .tokens(["f1"]), tokenField: .fid, format: .v1)
        #expect(addressing?.refusal(of: fid, app: "hms")?.message.contains("Firebase Installation ID") == true)
        for target in [MessageTarget.tokens(["t1"]), .users(["u1"]), .topic("news"), .condition("'a' in topics")] {
            #expect(addressing?.refusal(of: IncomingMessage(app: "hms", target: target), app: "hms") == nil)
        }
    }
}
