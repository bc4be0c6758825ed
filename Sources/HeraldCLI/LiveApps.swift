import Console
import Delivery
import Foundation
import Ingest
import ProviderKit
import Queue
import Support
import Synchronization

/// The apps stored in the database as this instance runs them (SPEC §22): applied at start, then looked for every
/// `pollSeconds` (and at once after a change through this instance's API), each change carried to the engine, to
/// ingest and to the console. A stored app that cannot run (its secrets sealed under another key, a key that no
/// longer loads) is logged and left as it was.
final class LiveApps: AppDirectory, @unchecked Sendable {
    static let pollSeconds = 2.0

    private let stored: StoredApps
    private let readers: any StoreReaders
    private let engine: DeliveryEngine
    private let context: ProviderContext
    private let ingest: IngestApps
    private let sandbox: Bool
    private let queue = DispatchQueue(label: "herald-apps")
    private let stopped = StopFlag()
    /// App → provider of the stored apps running, for the console's overview.
    private let running = Mutex<[String: String]>([:])
    /// App → certificate of the stored apps running that have one, for the overview.
    private let runningCertificates = Mutex<[String: CredentialFacts.Certificate]>([:])
    /// The version of each stored app applied (or found unusable). Only touched on `queue`.
    private var versions: [String: Int64] = [:]
    /// The stored apps running. Only touched on `queue`.
    private var apps: [String: AppConfiguration] = [:]

    init(
        stored: StoredApps, readers: any StoreReaders, engine: DeliveryEngine, context: ProviderContext,
        ingest: IngestApps, sandbox: Bool
    ) {
        (self.stored, self.readers, self.engine, self.context) = (stored, readers, engine, context)
        (self.ingest, self.sandbox) = (ingest, sandbox)
    }

    /// Applies the stored apps, then looks for changes every `pollSeconds` until `stop`.
    func start() {
        queue.sync { sync() }
        schedule()
    }

    func stop() { stopped.set() }

    private func schedule() {
        queue.asyncAfter(deadline: .now() + Self.pollSeconds) { [self] in
            guard !stopped.isSet else { return }
            sync()
            schedule()
        }
    }

    // MARK: - AppDirectory

    var configApps: [JSON] { stored.configApps.map(StoredApps.view) }

    var providers: [String: String] { running.withLock { $0 } }

    var certificates: [String: CredentialFacts.Certificate] { runningCertificates.withLock { $0 } }

    func prepare(name: String, body: JSON, now: Int64) throws(APIError) -> AppDefinitionRecord {
        do {
            return try stored.prepare(name: name, body: body, now: now).0
        } catch {
            throw APIError(
                status: error.status, code: error.status == 409 ? "Conflict" : "InvalidParameters",
                message: error.description)
        }
    }

    func view(_ record: AppDefinitionRecord) -> JSON { StoredApps.view(record) }

    func refresh(then done: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            sync()
            done()
        }
    }

    // MARK: - Applying changes (on `queue`)

    private func sync() {
        let current: [String: Int64]
        var records: [AppDefinitionRecord] = []
        do {
            current = try readers.read { try $0.appDefinitionVersions() }
            let changed = current.filter { versions[$0.key] != $0.value }
            if !changed.isEmpty {
                records = try readers.read { try $0.appDefinitions() }.filter { changed[$0.name] != nil }
            }
        } catch {
            Log.warn("reading the stored apps failed", ["error": .string("\(error)")])
            return
        }
        let removed = versions.keys.filter { current[$0] == nil }
        guard !records.isEmpty || !removed.isEmpty else { return }
        for record in records { apply(record) }
        for name in removed {
            versions[name] = nil
            guard apps.removeValue(forKey: name) != nil else { continue }
            engine.remove(name)
            Log.info("stored app removed", ["app": .string(name)])
        }
        publish()
    }

    private func apply(_ record: AppDefinitionRecord) {
        versions[record.name] = record.version
        guard !stored.isReadOnly(record.name) else {
            Log.warn("an app stored in the database has the name of a config-file app, which wins", [
                "app": .string(record.name),
            ])
            return
        }
        do {
            let app = try stored.open(record)
            let provider = try app.settings.provider(app: record.name, context: context)
            engine.put(DeliveryEngine.App(
                name: app.name, provider: provider, concurrency: app.concurrency, maxRate: app.maxRate,
                originConcurrency: app.settings.originConcurrency))
            apps[record.name] = app
            Log.info("stored app applied", [
                "app": .string(record.name), "provider": .string(record.provider), "version": .int(record.version),
            ])
        } catch {
            Log.error("a stored app cannot run; it stays as it was", [
                "app": .string(record.name), "version": .int(record.version), "error": .string("\(error)"),
            ])
        }
    }

    /// Ingest and the console learn the apps as they now are.
    private func publish() {
        let all = stored.configApps + apps.values.sorted { $0.name < $1.name }
        ingest.replace(Service.routes(of: all, sandbox: sandbox))
        running.withLock { $0 = apps.mapValues(\.provider) }
        runningCertificates.withLock { $0 = ServeConfiguration.certificates(of: apps.values) }
    }
}
