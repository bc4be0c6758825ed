import Foundation
import Support
import Testing

@testable import HeraldCLI

/// `serve`'s `apps`, read through the provider list: an app is its provider's, with that provider's settings, and an
/// app that names no provider Herald has, or a key of another provider, is refused at start, saying which.
@Suite struct AppConfigurationTests {
    let directory = HeraldProcess.makeDirectory()

    private func resolve(_ apps: String, _ flags: [String] = []) throws -> ServeConfiguration {
        let config = directory.appendingPathComponent("herald.json").path
        try #"{"apps": [\#(apps)]}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let arguments = try Arguments(
            ["--config", config, "--db", directory.appendingPathComponent("h.db").path] + flags,
            options: ServeConfiguration.options)
        return try ServeConfiguration.resolve(arguments, environment: [:])
    }

    @Test(arguments: [
        (#"{"name":"a","provider":"pigeon","server_key":"k"}"#,
         #"apps[0] "a": provider "pigeon" is not supported: use "fcm-v1""#),
        (#"{"name":"ios","provider":"apns","server_key":"k","key_file":"k.p8","key_id":"ABCDEFGHIJ","team_id":"T","topic":"t"}"#,
         #"apps[0] "ios": "server_key" does not apply to provider "apns" (it is fcm-legacy's)"#),
        (#"{"name":"a","provider":"fcm-v1","service_account_file":"sa.json","key_id":"ABCDEFGHIJ"}"#,
         #"apps[0] "a": "key_id" does not apply to provider "fcm-v1" (it is apns's)"#),
        (#"{"name":"a","server_key":"k","vapid_subject":"mailto:a@b.c"}"#,
         #"apps[0] "a": "vapid_subject" does not apply to provider "fcm-legacy" (it is webpush's)"#),
        (#"{"name":"a","endpoint":"https://gateway.example/fcm/send"}"#, #"apps[0] "a" needs a "provider": "#),
    ])
    func anUnknownProviderOrAnotherProvidersKeyIsRefusedAtStart(_ app: String, _ says: String) throws {
        #expect {
            _ = try resolve(app, ["--sandbox"])
        } throws: { error in
            "\(error)".contains(says)
        }
    }

    /// An entry written before `"provider"` existed is the provider whose keys it uses, never another.
    @Test func anAppWithoutProviderIsTheOneWhoseKeysItUses() throws {
        let configuration = try resolve(#"""
            {"name":"old","server_key":"k"},
            {"name":"v1","service_account_file":"sa.json"},
            {"name":"phone","key_file":"k.p8","key_id":"ABCDEFGHIJ","team_id":"T","topic":"com.example"}
            """#, ["--sandbox"])
        let providers = Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.name, $0.provider) })
        #expect(providers["old"] == "fcm-legacy")
        #expect(providers["v1"] == "fcm-v1")
        #expect(providers["phone"] == "apns")
    }

    /// The sandbox's own apps come from the list: FCM v1's `default`, APNs' `ios`, Web Push's `web`, HMS's `hms`,
    /// each with its provider's concurrency unless told.
    @Test func theSandboxHasAnAppOfEachProviderThatHasOne() throws {
        let configuration = try ServeConfiguration.resolve(
            try Arguments(["--sandbox", "--db", directory.appendingPathComponent("h.db").path],
                          options: ServeConfiguration.options),
            environment: [:])
        #expect(configuration.apps.map(\.name) == ["default", "ios", "web", "hms"])
        #expect(configuration.apps.map(\.provider) == ["fcm-v1", "apns", "webpush", "hms"])
        #expect(configuration.apps.allSatisfy { $0.concurrency == ServeConfiguration.sandboxConcurrency })
    }
}
