import Foundation
import OAuth
import ProviderKit
import ProviderList
import Queue
import Support

/// Apps stored in the database (SPEC §22): an `apps` entry checked and its secrets sealed for storage, a stored one
/// opened back into an app, and what may be shown of either — key ids and fingerprints, never a secret. `herald
/// apps`, `/v1/admin/apps` and every `serve` instance applying a change go through here.
struct StoredApps: Sendable {
    /// `--secrets-key-file`'s key; nil: an app with a secret can be neither stored nor opened.
    var key: SecretsKey?
    /// The apps of the config file (and flags): read-only here.
    var configApps: [AppConfiguration] = []

    /// Why a change is refused: 400 (the entry), 409 (a config-file app), 404.
    struct Refusal: Error, CustomStringConvertible {
        var status: Int
        var description: String
    }

    func isReadOnly(_ name: String) -> Bool { configApps.contains { $0.name == name } }

    /// `body` (an `apps` entry, its `name` optional) checked as the app `name` and sealed: every key of its entry
    /// known, its files read, its keys parsed (a service account signs, a `.p8` is a P-256 key). Reads files and
    /// signs: call on a thread of your own.
    func prepare(name: String, body: JSON, now: Int64) throws(Refusal) -> (AppDefinitionRecord, AppConfiguration) {
        guard isReadOnly(name) == false else {
            throw Refusal(status: 409, description: """
                app "\(name)" is defined in the config file, which stays its source of truth: change it there
                """)
        }
        guard Self.isName(name) else {
            throw Refusal(status: 400, description: """
                an app's name is 1 to 64 letters, digits, ".", "_" or "-"; got "\(name.prefix(64))"
                """)
        }
        guard var members = body.objectValue else {
            throw Refusal(status: 400, description: "the body must be a JSON object: an \"apps\" entry")
        }
        if let given = body["name"], given != .string(name) {
            throw Refusal(status: 400, description: "the body's \"name\" must be \"\(name)\", the app's name")
        }
        members.removeAll { $0.key == "name" }
        if body[ServeConfiguration.outcomeWebhookKey] != nil {
            throw Refusal(status: 400, description: """
                "\(ServeConfiguration.outcomeWebhookKey)" is read from the config file only (a stored app's outcomes \
                go to the config file's top-level webhook)
                """)
        }
        let entry = JSON(members: [("name", .string(name))] + members.map { ($0.key, $0.value) })
        let definition: any ProviderDefinition
        do {
            definition = try Self.definition(of: try ServeConfiguration.parseApp(
                entry, label: "app", concurrency: nil, directory: nil))
        } catch {
            throw Refusal(status: 400, description: "\(error)")
        }
        // Each secret as its text (a file read here, on the instance that takes the change), checked, then sealed.
        var opened: [(String, JSON)] = []
        for field in definition.secretFields {
            guard let source = AppEntry(json: entry, app: name, directory: nil).secret(field) else { continue }
            do {
                let text = try source.text(
                    app: name, what: field.fileKey.map { "\"\($0)\"" } ?? field.key, binary: field.binary)
                opened.append((field.key, .string(text)))
            } catch {
                throw Refusal(status: 400, description: "\(error)")
            }
        }
        let secretKeys = Set(definition.secretFields.flatMap { [$0.key] + ($0.fileKey.map { [$0] } ?? []) })
        let stored = JSON(members: members.filter { !secretKeys.contains($0.key) }.map { ($0.key, $0.value) })
        let app: AppConfiguration
        do {
            app = try self.app(name: name, definition: stored, secrets: opened)
        } catch {
            throw Refusal(status: 400, description: "\(error)")
        }
        let passwords = Set(definition.secretFields.filter(\.isPassword).map(\.key))
        var secrets: [(String, JSON)] = []
        for (field, text) in opened {
            guard let key else { throw Refusal(status: 400, description: "\(SecretsError.noKey)") }
            let text = text.stringValue ?? ""
            do {
                let sealed = try key.seal(Array(text.utf8), context: Self.context(name, field))
                let facts = passwords.contains(field) ? [] : Self.facts(text)
                secrets.append((field, JSON(members: [("sealed", .string(sealed))] + facts)))
            } catch {
                throw Refusal(status: 400, description: "\(error)")
            }
        }
        let record = AppDefinitionRecord(
            name: name, provider: definition.name, definition: stored.serialized(),
            secrets: JSON(members: secrets).serialized(), createdAt: now, updatedAt: now)
        return (record, app)
    }

    /// A stored app, its secrets opened and its keys loaded, as `serve` runs it.
    func open(_ record: AppDefinitionRecord) throws -> AppConfiguration {
        let definition = try JSON.parse(Array(record.definition.utf8))
        var opened: [(String, JSON)] = []
        for (field, sealed) in try JSON.parse(Array(record.secrets.utf8)).objectValue ?? [] {
            guard let key else { throw SecretsError.noKey }
            let text = try key.open(sealed["sealed"]?.stringValue ?? "", context: Self.context(record.name, field))
            opened.append((field, .string(String(decoding: text, as: UTF8.self))))
        }
        return try app(name: record.name, definition: definition, secrets: opened)
    }

    private func app(name: String, definition: JSON, secrets: [(String, JSON)]) throws -> AppConfiguration {
        let members = [("name", JSON.string(name))] + (definition.objectValue ?? []).map { ($0.key, $0.value) }
        var app = try ServeConfiguration.parseApp(
            JSON(members: members + secrets), label: "app", concurrency: nil, directory: nil)
        try app.settings.check(app: name)
        try app.settings.load(app: name)
        return app
    }

    // MARK: - What is shown

    /// A stored app as `herald apps show`, `GET /v1/admin/apps/{name}` and the console show it: its entry without
    /// the secrets, and of each secret what identifies it (`client_email`, `private_key_id`, a SHA-256 fingerprint,
    /// the id of the key that sealed it).
    static func view(_ record: AppDefinitionRecord) -> JSON {
        var members: [(String, JSON)] = [
            ("name", .string(record.name)), ("provider", .string(record.provider)), ("source", "database"),
        ]
        let definition = (try? JSON.parse(Array(record.definition.utf8)))?.objectValue ?? []
        members += definition.map { ($0.key, $0.value) }
        for (field, facts) in (try? JSON.parse(Array(record.secrets.utf8)))?.objectValue ?? [] {
            var shown = (facts.objectValue ?? []).filter { $0.key != "sealed" }.map { ($0.key, $0.value) }
            if let sealed = facts["sealed"]?.stringValue, let keyID = try? SecretsKey.keyID(of: sealed) {
                shown.append(("secrets_key_id", .string(keyID)))
            }
            members.append((field, JSON(members: shown)))
        }
        members += [
            ("version", .int(record.version)), ("created_at", .int(record.createdAt)),
            ("updated_at", .int(record.updatedAt)),
        ]
        return JSON(members: members)
    }

    /// A config-file app as the same places show it: read-only, its secrets not described.
    static func view(_ app: AppConfiguration) -> JSON {
        ["name": .string(app.name), "provider": .string(app.provider), "source": "config",
         "endpoint": .string(app.settings.endpoint)]
    }

    /// What may be shown of a secret: its SHA-256, and a service account's `client_email` and `private_key_id`.
    private static func facts(_ text: String) -> [(String, JSON)] {
        let sha256 = SHA256.digest(Array(text.utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        var facts: [(String, JSON)] = [("sha256", .string(sha256))]
        if let account = try? JSON.parse(Array(text.utf8)), account.objectValue != nil {
            for name in ["client_email", "private_key_id"] {
                if let value = account[name]?.stringValue { facts.append((name, .string(value))) }
            }
        }
        return facts
    }

    private static func definition(of app: AppConfiguration) throws -> any ProviderDefinition {
        guard let definition = ProviderList.named(app.provider) else {
            throw ConfigurationError("provider \"\(app.provider)\" is not supported")
        }
        return definition
    }

    /// Where a sealed secret belongs (authenticated with it): one moved to another app or field does not open.
    private static func context(_ app: String, _ field: String) -> String { "apps/\(app)/\(field)" }

    static func isName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { $0 < 0x80 && (Character(UnicodeScalar($0)).isLetter
                || Character(UnicodeScalar($0)).isNumber || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D) }
    }
}
