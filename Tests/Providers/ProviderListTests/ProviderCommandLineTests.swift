import ProviderKit
import ProviderList
import Testing

/// What the providers give `herald`'s command line: `serve`'s quick-start flags, each parsed by its own provider's
/// folder, and commands of their own.
@Suite struct ProviderCommandLineTests {
    /// Flags set as a flag would set them; nothing comes from a config file.
    private func flags(_ given: [String: String]) -> ServeFlagValues {
        ServeFlagValues(given: { given[$0] }, outsideFile: { given[$0] != nil })
    }

    private func apns() throws -> any ProviderDefinition { try #require(ProviderList.named("apns")) }

    @Test func eachFlagAndCommandIsOneProvidersAndTheFlagThatAsksForAnAppIsAmongItsFlags() {
        var flagOwners: [String: String] = [:]
        var commandOwners: [String: String] = [:]
        for provider in ProviderList.all {
            #expect(!provider.title.isEmpty, "\(provider.name)")
            if let quickStart = provider.quickStart {
                #expect(quickStart.flags.contains { $0.name == quickStart.on }, "\(provider.name)")
            }
            for flag in provider.quickStart?.flags ?? [] {
                #expect(flagOwners[flag.name] == nil, "--\(flag.name): \(provider.name)'s and another's")
                flagOwners[flag.name] = provider.name
            }
            for command in provider.commands {
                #expect(commandOwners[command.name] == nil, "\(command.name)")
                commandOwners[command.name] = provider.name
            }
        }
        #expect(flagOwners["apns-key-file"] == "apns" && flagOwners["fcm-key"] == "fcm-legacy")
        #expect(flagOwners["fcm-service-account"] == "fcm-v1")
        #expect(commandOwners["webpush-keys"] == "webpush")
    }

    @Test func theAPNsFlagsMakeAnAPNsAppIOS() throws {
        let settings = try apns().quickStartSettings(flags([
            "apns-key-file": "/etc/herald/AuthKey.p8", "apns-key-id": "ABCDEFGHIJ", "apns-team-id": "TEAM",
            "apns-topic": "com.example.app", "apns-environment": "sandbox",
        ]), current: nil)
        #expect(try apns().quickStart?.app == "ios")
        #expect(settings?.provider == "apns")
        #expect(settings?.endpoint == "https://api.sandbox.push.apple.com")
    }

    @Test func withoutTheirKeyFileTheAPNsFlagsLeaveTheAppsAlone() throws {
        #expect(try apns().quickStartSettings(flags([:]), current: nil) == nil)
    }

    @Test(arguments: [
        (["apns-topic": "com.example.app"], #"--apns-topic needs --apns-key-file (the .p8 key of app "ios")"#),
        (["apns-key-file": "k.p8", "apns-key-id": "ABCDEFGHIJ", "apns-topic": "t"],
         "--apns-key-file needs --apns-team-id too"),
        (["apns-key-file": "k.p8", "apns-key-id": "short", "apns-team-id": "T", "apns-topic": "t"],
         "key_id must be the key's 10-character Key ID"),
    ])
    func incompleteAPNsFlagsAreRefusedSayingWhatIsMissing(_ given: [String: String], _ says: String) throws {
        #expect {
            _ = try apns().quickStartSettings(flags(given), current: nil)
        } throws: { error in
            "\(error)".contains(says)
        }
    }

    /// An `ios` in the config file and the flags would be two apps of one name.
    @Test func theAPNsFlagsRefuseAnIOSAppTheConfigFileHas() throws {
        let configured = try #require(apns().sandboxApp?.settings)
        let given = flags([
            "apns-key-file": "k.p8", "apns-key-id": "ABCDEFGHIJ", "apns-team-id": "T", "apns-topic": "t",
        ])
        #expect {
            _ = try apns().quickStartSettings(given, current: configured)
        } throws: { error in
            "\(error)".contains(#"--apns-key-file configures app "ios", which the config file's "apps" also has"#)
        }
    }
}
