import Console
import Delivery
import FCMSimulator
import Foundation
import HTTP
import Ingest
import OAuth
import ProviderKit
import ProviderList
import Queue
import Send
import Storage
import Support
import Synchronization

/// The running parts of `herald serve` and the order they start and stop in.
final class Service: Sendable {
    private let configuration: ServeConfiguration
    private let database: ServiceDatabase
    private let writer: any StoreWriter
    private let readers: any StoreReaders
    private let simulator: HTTPServer?
    /// The simulator over HTTPS (HTTP/2), for the sandbox's APNs apps, and the file of its certificate they trust (see
    /// `serveOverTLS`), open until stop.
    private let simulatorTLS: (front: FCMSimulator.TLSFront, caFile: String, descriptor: Int32)?
    private let engine: DeliveryEngine
    /// The OAuth token requests of the apps that need them (FCM v1's), made when the first such app is built.
    private let tokenPool = OnDemandPool()
    private let server: HTTPServer
    /// The apps stored in the database, applied while running (SPEC §22).
    private let liveApps: LiveApps
    private let stopping = StopFlag()
    private let metrics = Metrics.herald()
    /// The console's chart: what finished per minute over the last hour, sampled from `metrics`.
    private let history = RateHistory(since: Clock.nowMillis())
    /// The latest count of the backlog, from the gauges' refresh: the console's overview with a big backlog.
    private let statusSnapshot = StatusSnapshot()
    private let gauges = DispatchQueue(label: "herald-gauges")
    /// The per-tenant API tokens (SPEC §22), honoured only with `--api-token`.
    private let apiTokens: APITokens
    /// The outcome webhooks' threads; nil without webhooks.
    private let webhooks: OutcomeWebhookSender?

    init(_ configuration: ServeConfiguration) throws {
        self.configuration = configuration
        database = try ServiceDatabase.open(configuration.database, durability: configuration.durability)
        (writer, readers) = (database.writer, database.readers)

        var apps = configuration.apps
        if configuration.sandbox {
            // Every app gets throw-away credentials that only the built-in simulator trusts.
            let setup = SandboxSetup()
            for index in apps.indices { try apps[index].settings.prepareSandbox(setup) }
            let handler = try setup.simulator(sides: ProviderList.simulatorSides)
            let simulator = HTTPServer(
                configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: handler)
            let address = try simulator.start()
            // Where the sides say they listen: FCM legacy's send URL, as the log line has always given.
            let endpoint = handler.announcement(baseURL: "http://\(address)").first { $0.key == "endpoint" }?.value
                ?? "http://\(address)"
            // APNs and Web Push are HTTP/2 over TLS, as Apple's and the push services': the same simulator behind a
            // throw-away certificate that only those apps trust (their CA file), so the sandbox sends over the
            // transport production uses.
            let simulatorTLS = try apps.contains(where: { $0.settings.sandboxNeedsTLS })
                ? Self.serveOverTLS(handler) : nil
            let sandbox = SandboxSimulator(
                url: "http://\(address)", tls: simulatorTLS.map { (url: $0.front.baseURL, caFile: $0.caFile) })
            for index in apps.indices { apps[index].settings.connectSandbox(sandbox) }
            if let simulatorTLS {
                Log.warn("SANDBOX MODE: every push goes to the built-in FCM simulator, none reaches a device", [
                    "simulator": .string(endpoint), "simulator_https": .string(simulatorTLS.front.baseURL),
                    "simulator_ca_file": .string(simulatorTLS.caFile),
                ])
            } else {
                Log.warn("SANDBOX MODE: every push goes to the built-in FCM simulator, none reaches a device", [
                    "simulator": .string(endpoint),
                ])
            }
            self.simulator = simulator
            self.simulatorTLS = simulatorTLS
        } else {
            simulator = nil
            simulatorTLS = nil
        }
        let tokenPool = self.tokenPool
        let context = ProviderContext(requestTimeoutMillis: configuration.requestTimeoutMillis) { tokenPool.pool }
        var options = DeliveryEngine.Options()
        options.leaseMillis = configuration.leaseMillis
        options.liveness = configuration.liveness
        options.sharedQueue = database.isShared
        engine = DeliveryEngine(writer: writer, apps: try apps.map { app in
            DeliveryEngine.App(
                name: app.name, provider: try app.settings.provider(app: app.name, context: context),
                concurrency: app.concurrency, maxRate: app.maxRate, originConcurrency: app.settings.originConcurrency)
        }, metrics: metrics, options: options)
        webhooks = configuration.outcomeWebhooks.isEmpty ? nil : OutcomeWebhookSender(
            webhooks: configuration.outcomeWebhooks, writer: writer, readers: readers, metrics: metrics,
            options: .init(retentionMillis: configuration.tokenEventRetentionMillis))
        let (stopping, engine) = (self.stopping, self.engine)
        // Wrong tokens count against a client's address whether sent to ingest, the console's API or its login.
        let guesses = GuessThrottle()
        let apiTokens = configuration.apiToken == nil
            ? APITokens() : APITokens(try readers.read { try $0.apiTokens(activeOnly: true) })
        self.apiTokens = apiTokens
        let known = Self.routes(of: apps, sandbox: configuration.sandbox)
        let api = IngestAPI(
            writer: database.ingestWriter, readers: readers, apiToken: configuration.apiToken, tenants: apiTokens,
            knownApps: known.knownApps, projects: known.projects, addressing: known.addressing,
            guesses: guesses, metrics: metrics,
            isShuttingDown: { stopping.isSet }, committed: { engine.wake() })
        liveApps = LiveApps(
            stored: StoredApps(key: configuration.secretsKey, configApps: apps), readers: readers, engine: engine,
            context: context, ingest: api.apps, sandbox: configuration.sandbox)
        let admin = AdminAPI(
            writer: writer, readers: readers,
            access: ConsoleAccess(
                apiToken: configuration.apiToken, readOnlyToken: configuration.consoleReadOnlyToken, guesses: guesses,
                tenants: apiTokens),
            apiTokens: apiTokens,
            providers: Dictionary(apps.map { ($0.name, $0.provider) }, uniquingKeysWith: { first, _ in first }),
            credentials: configuration.credentialFacts, metrics: metrics, history: history, snapshot: statusSnapshot,
            committed: { engine.wake() }, apps: liveApps)
        var serverConfiguration = HTTPServerConfiguration(address: configuration.listen)
        serverConfiguration.maxConnections = configuration.maxConnections
        // Every route behind one front door: no other site's page, and no rebound name without a token.
        let routes = ConsoleRouter(api: api, admin: admin)
        server = HTTPServer(
            configuration: serverConfiguration,
            handler: FrontDoor(routes, loopbackOnly: configuration.apiToken == nil))
    }

    func start() throws {
        let window = configuration.ttlZeroWindowMillis
        for writer in database.writers { try writer.write { $0.ttlZeroWindowMillis = window } }
        try engine.start()
        liveApps.start()
        database.startWakeUps { [engine] in engine.wake() }
        webhooks?.start()
        refreshGauges()
        if configuration.apiToken != nil { refreshAPITokens() }
        gauges.async { self.trimBookkeeping() }
        let address = try server.start()
        Log.info("listening", [
            "address": .string("\(address)"), "db": .string("\(configuration.database)"),
            "durability": .string(
                database.isShared ? "synchronous_commit of the server" : configuration.durability.rawValue),
            "apps": .string(configuration.apps.map(\.name).joined(separator: ",")),
            "secrets_key_id": .string(configuration.secretsKey?.id ?? "none"),
        ])
    }

    /// Stop accepting and answer open requests; stop claiming, wait for requests at FCM (releasing what does not
    /// finish in time); then close the database, checkpointing its WAL.
    func stop() {
        stopping.set()
        server.shutdown(gracePeriod: 10)
        liveApps.stop()
        engine.stop(gracePeriod: 10)
        webhooks?.stop(gracePeriod: 2)
        tokenPool.made?.shutdown(gracePeriod: 0)
        simulator?.shutdown(gracePeriod: 1)
        let uses = apiTokens.takeUses()
        if !uses.isEmpty { _ = try? writer.write { try $0.markAPITokensUsed(uses) } }
        if let simulatorTLS {
            simulatorTLS.front.server.shutdown(gracePeriod: 1)
            close(simulatorTLS.descriptor)
        }
        database.close()
    }
}

extension Service {
    /// The sandbox's simulator over HTTPS on an ephemeral loopback port with a new self-signed certificate, for the
    /// APNs apps' client to trust as its CA file. The certificate is written to the temporary directory, opened and
    /// unlinked at once, and named by `/proc/<pid>/fd/<n>`: readable (by this process, and by its user's `curl
    /// --cacert`) while the descriptor is open, and gone with the process however it ends, a kill included.
    private static func serveOverTLS(
        _ simulator: FCMSimulator
    ) throws -> (front: FCMSimulator.TLSFront, caFile: String, descriptor: Int32) {
        let written = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-sandbox-\(getpid())-\(UInt64.random(in: .min ... .max)).pem").path
        let front = try simulator.serveTLS(.init(address: .tcp(host: "127.0.0.1", port: 0), certificateOut: written))
        let descriptor = open(written, O_RDONLY | O_CLOEXEC)
        unlink(written)
        guard descriptor >= 0 else {
            front.server.shutdown(gracePeriod: 0)
            throw ServeConfiguration.Invalid(description: "sandbox: cannot open the simulator's certificate \(written)")
        }
        return (front, "/proc/\(getpid())/fd/\(descriptor)", descriptor)
    }

    /// What ingest knows of `apps`: their names, FCM project id → app for the drop-in v1 endpoint (the first app
    /// wins a project id given twice; in the sandbox none, as its simulator takes any project, so a backend can keep
    /// its real project id in the URL), and what each can address.
    static func routes(of apps: [AppConfiguration], sandbox: Bool) -> IngestApps.Routes {
        var projects: [String: String] = [:]
        for app in apps where !sandbox {
            if let project = app.settings.projectID, projects[project] == nil { projects[project] = app.name }
        }
        return IngestApps.Routes(
            knownApps: Set(apps.map(\.name)), projects: projects,
            addressing: Dictionary(
                apps.map { ($0.name, $0.settings.addressing) }, uniquingKeysWith: { first, _ in first }))
    }

    /// Queue depth, oldest ready age and paused apps come from the database, not from counters: read from the
    /// indexes (the same figures as `herald status`) on a reader thread every few seconds, so a scrape never
    /// touches the database. Finished rows are counted by `herald_deliveries_total`, not here.
    private func refreshGauges() {
        guard !stopping.isSet else { return }
        let (metrics, statusSnapshot) = (self.metrics, self.statusSnapshot)
        let started = Clock.monotonicSeconds()
        let readAt = Clock.nowMillis()
        history.record(metrics, now: readAt)
        readers.enqueue({ connection in
            // The gauges need no last-minute counts (`herald_deliveries_total` has them).
            try connection.snapshot { try connection.appStatuses(now: readAt, lastMinute: false) }
        }) { result in
            if case .success(let apps) = result {
                let now = Clock.nowMillis()
                statusSnapshot.record(apps, at: readAt, tookMillis: now - readAt)
                metrics.replace("herald_queue_depth", with: apps.flatMap { app in
                    [("queued", app.queued), ("inflight", app.inflight), ("dead", app.dead)].map { state, count in
                        (["app": app.name, "state": state], Double(count))
                    }
                })
                metrics.replace("herald_app_paused", with: apps.map { (["app": $0.name], $0.paused ? 1 : 0) })
                metrics.replace("herald_scheduled_messages", with: apps.map {
                    (["app": $0.name], Double($0.scheduledMessages))
                })
                metrics.replace("herald_oldest_ready_seconds", with: apps.map { app in
                    (["app": app.name], app.oldestReadySince.map { Double(max(0, now - $0)) / 1000 } ?? 0)
                })
            }
            let delay = Self.gaugeRefreshDelay(took: Clock.monotonicSeconds() - started)
            self.gauges.asyncAfter(deadline: .now() + delay) { self.refreshGauges() }
        }
    }

    static let gaugeRefreshSeconds = 10.0

    /// Every `APITokens.refreshMillis`: the uses of per-tenant tokens written as `last_used_at`, and the tokens
    /// read again, so one made or revoked by another instance or by `herald api-tokens` holds here within that time.
    private func refreshAPITokens() {
        guard !stopping.isSet else { return }
        apiTokens.refresh(readers: readers, writer: writer) {
            self.gauges.asyncAfter(deadline: .now() + .milliseconds(Int(APITokens.refreshMillis))) {
                self.refreshAPITokens()
            }
        }
    }

    /// Seconds until the next refresh of the gauges after one that took `took` seconds: every 10 s, or 20 times what
    /// the last one took when that is longer. Counting the backlog reads one index entry per queued row, so with
    /// millions queued a refresh every 10 s would cost a share of a core that grows with the backlog; this keeps
    /// it near 5 % (the gauges are then that much older).
    static func gaugeRefreshDelay(took: Double) -> Double {
        max(gaugeRefreshSeconds, 20 * took)
    }

    /// Hourly (and at start): the token-event and outcome feeds past their retention, and reconciliation's bookkeeping past the
    /// longest TTL, in small writer jobs so ingest never waits behind a big delete.
    private func trimBookkeeping() {
        guard !stopping.isSet else { return }
        let eventsCutoff = Clock.nowMillis() - configuration.tokenEventRetentionMillis
        var trimmed = 0
        do {
            while !stopping.isSet {
                let count = try writer.write { connection in
                    let feeds = try connection.pruneFeeds(before: eventsCutoff, limit: 1000)
                    return try feeds.tokenEvents + feeds.outcomes
                        + connection.pruneReconciliationState(now: Clock.nowMillis(), limit: 1000)
                }
                trimmed += count
                if count == 0 { break }
            }
            if trimmed > 0 {
                Log.info("trimmed token events, outcomes and reconciliation bookkeeping", ["rows": .int(Int64(trimmed))])
            }
        } catch {
            Log.warn("trimming token events failed", ["error": .string("\(error)")])
        }
        gauges.asyncAfter(deadline: .now() + .seconds(3600)) { self.trimBookkeeping() }
    }
}

/// The OAuth token requests' pool, made on first use (an app without OAuth needs none).
final class OnDemandPool: Sendable {
    private let state = Mutex<HTTPClientPool?>(nil)

    var pool: HTTPClientPool {
        state.withLock { made in
            if let made { return made }
            let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "oauth")
            made = pool
            return pool
        }
    }

    /// The pool if one was made.
    var made: HTTPClientPool? { state.withLock { $0 } }
}

/// Set once when the service begins to stop; read from any thread.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
