import Foundation
import Support
import Testing

@testable import HeraldCLI

/// `serve`'s quick-start flags (an app without an `apps` list) as `ServeConfiguration` reads them through the
/// provider list: each provider's flags make its app, two providers' flags for one app are refused, and so is a flag
/// no provider has.
@Suite struct QuickStartFlagsTests {
    let directory = HeraldProcess.makeDirectory()

    private func resolve(_ flags: [String], config: String? = nil) throws -> ServeConfiguration {
        var given = ["--db", directory.appendingPathComponent("h.db").path] + flags
        if let config {
            let path = directory.appendingPathComponent("herald.json").path
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            given += ["--config", path]
        }
        return try ServeConfiguration.resolve(
            try Arguments(given, options: ServeConfiguration.options), environment: [:])
    }

    private func refusal(_ flags: [String], config: String? = nil) -> String {
        do {
            _ = try resolve(flags, config: config)
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test func theAPNsFlagsMakeAnAPNsAppIOSBesideFCMsDefault() throws {
        let configuration = try resolve([
            "--sandbox", "--fcm-key", "k", "--apns-key-file", "k.p8", "--apns-key-id", "ABCDEFGHIJ",
            "--apns-team-id", "TEAM", "--apns-topic", "com.example.app",
        ])
        let providers = Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.name, $0.provider) })
        #expect(providers["default"] == "fcm-legacy")
        #expect(providers["ios"] == "apns")
    }

    @Test func aFlagNoProviderHasIsRefused() {
        #expect(refusal(["--apns-key", "k.p8"]) == "unknown option --apns-key")
        #expect(refusal(["--sandbox"], config: #"{"apns_key": "k.p8"}"#).hasSuffix(#"unknown key "apns_key""#))
    }

    @Test func twoProvidersFlagsForAppDefaultAreRefused() {
        #expect(refusal(["--fcm-key", "k", "--fcm-service-account", "sa.json"]) == """
            give app "default" either --fcm-key (FCM legacy) or --fcm-service-account (FCM HTTP v1), not both
            """)
    }

    /// `--fcm-key` never turns an app of another provider into a legacy one.
    @Test func theLegacyKeyRefusesAConfigFileDefaultOfAnotherProvider() {
        let config = #"{"apps": [{"name": "default", "provider": "fcm-v1", "service_account_file": "sa.json"}]}"#
        #expect(refusal(["--sandbox", "--fcm-key", "k"], config: config) == """
            app "default" is "fcm-v1" in the config file, and --fcm-key (or HERALD_FCM_KEY) gives it a legacy server \
            key: remove one of them
            """)
    }

    /// A key file named in the config file is relative to the file, as an `apps` entry's is.
    @Test func aQuickStartKeyFileInTheConfigFileIsRelativeToIt() {
        let config = #"""
            {"apns_key_file": "AuthKey.p8", "apns_key_id": "ABCDEFGHIJ", "apns_team_id": "T", "apns_topic": "t"}
            """#
        #expect(refusal([], config: config).contains(directory.appendingPathComponent("AuthKey.p8").path))
    }

    @Test func everyServeSettingIsNamedOnce() {
        let names = ServeConfiguration.settings.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(HeraldCLI.commands.filter { $0.name == "webpush-keys" }.count == 1)
    }
}
