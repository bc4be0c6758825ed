import Foundation
import Queue
import Testing

private let t0: Int64 = 1_700_000_000_000

/// Apps stored at run time (SPEC §22) on every engine: a new app, a replacement (its version grows, its creation time
/// stays), a removal (the row keeps its pause state, the version still grows so instances see it), and an app of the
/// config file (an `apps` row without a definition) not listed as stored.
@Suite struct AppDefinitionStoreSuite {
    static func record(_ name: String, secrets: String = #"{"key":{"sealed":"hs1:0123456789abcdef:AA"}}"#, at: Int64)
        -> AppDefinitionRecord
    {
        AppDefinitionRecord(
            name: name, provider: "apns", definition: #"{"key_id":"ABCDEFGHIJ"}"#, secrets: secrets, createdAt: at,
            updatedAt: at)
    }

    @Test(arguments: Engine.available)
    func storedAppsAreAddedReplacedAndRemovedWithGrowingVersions(_ engine: Engine) throws {
        let underTest = try engine.make()
        let store = underTest.database
        try store.transaction { try store.ensureApp("config-app") }
        #expect(try store.appDefinitions().isEmpty)

        let (added, created) = try store.transaction { try store.putAppDefinition(Self.record("ios", at: t0)) }
        #expect(created && added.version == 1 && added.createdAt == t0)
        let (replaced, again) = try store.transaction {
            try store.putAppDefinition(Self.record("ios", secrets: "{}", at: t0 + 5))
        }
        #expect(!again && replaced.version == 2 && replaced.createdAt == t0 && replaced.updatedAt == t0 + 5)
        #expect(replaced.secrets == "{}")
        #expect(try store.appDefinitionVersions() == ["ios": 2])
        #expect(try store.appDefinitions().map(\.name) == ["ios"])

        try underTest.pause("ios", now: t0)
        #expect(try store.transaction { try store.removeAppDefinition("ios", now: t0 + 9) })
        #expect(try !store.transaction { try store.removeAppDefinition("ios", now: t0 + 9) })
        #expect(try store.appDefinitionVersions().isEmpty)
        #expect(try store.apps().first { $0.name == "ios" }?.paused == true, "the pause state stays")
        #expect(try underTest.strings("SELECT version || ' ' || coalesce(secrets, '-') FROM apps WHERE name = 'ios'")
            == ["3 -"])

        // Stored again: new, a later version than any before, a new creation time.
        let (back, new) = try store.transaction { try store.putAppDefinition(Self.record("ios", at: t0 + 20)) }
        #expect(new && back.version == 4 && back.createdAt == t0 + 20)
    }
}
