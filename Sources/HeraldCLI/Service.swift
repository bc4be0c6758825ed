import Console
import Delivery
import FCMSimulator
import Foundation
import HTTP
import Ingest
import OAuth
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
    /// FCM v1 apps' token requests; nil without v1 apps.
    private let tokenPool: HTTPClientPool?
    private let server: HTTPServer
    private let stopping = StopFlag()
    private let metrics = Metrics.herald()
    /// The console's chart: what finished per minute over the last hour, sampled from `metrics`.
    private let history = RateHistory(since: Clock.nowMillis())
    /// The latest count of the backlog, from the gauges' refresh: the console's overview with a big backlog.
    private let statusSnapshot = StatusSnapshot()
    private let gauges = DispatchQueue(label: "herald-gauges")
    /// The outcome webhooks' threads; nil without webhooks.
    private let webhooks: OutcomeWebhookSender?

    init(_ configuration: ServeConfiguration) throws {
        self.configuration = configuration
        database = try ServiceDatabase.open(configuration.database, durability: configuration.durability)
        (writer, readers) = (database.writer, database.readers)

        var apps = configuration.apps
        if configuration.sandbox {
            // v1 apps get a throw-away service account that only the built-in simulator trusts.
            let sandboxAccount = try apps.contains { $0.provider == .fcmV1 }
                ? ServiceAccount(clientEmail: "sandbox@herald.invalid", privateKey: RSAPrivateKey.generate(),
                                 projectID: "sandbox", tokenURI: nil)
                : nil
            // APNs apps sign with one throw-away key that only the simulator trusts.
            let sandboxKey = try apps.contains { $0.provider == .apns } ? P256PrivateKey.generate() : nil
            let sandboxAPNs = APNsSettings.sandboxed()
            let apnsAccount = sandboxKey.map {
                FCMSimulator.APNsAccount(
                    publicKeyPEM: $0.publicKey.pem(), keyID: sandboxAPNs.keyID, teamID: sandboxAPNs.teamID)
            }
            let handler = FCMSimulator(configuration: .init(
                v1Account: sandboxAccount.map(FCMSimulator.V1Account.init), apnsAccount: apnsAccount))
            let simulator = HTTPServer(
                configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: handler)
            let address = try simulator.start()
            let endpoint = SimulatorCommand.endpointURL(address)
            // APNs and Web Push are HTTP/2 over TLS, as Apple's and the push services': the same simulator behind a
            // throw-away certificate that only those apps trust (their CA file), so the sandbox sends over the
            // transport production uses.
            let simulatorTLS = try apps.contains(where: { $0.provider == .apns || $0.provider == .webPush })
                ? Self.serveOverTLS(handler) : nil
            for index in apps.indices {
                if apps[index].provider == .webPush, let simulatorTLS {
                    // Every subscription's push service is the simulator's, over TLS, with a throw-away VAPID key.
                    apps[index].endpoint = simulatorTLS.front.baseURL
                    apps[index].webPush?.key = try P256PrivateKey.generate()
                    apps[index].webPush?.caFile = simulatorTLS.caFile
                } else if apps[index].provider == .apns, let simulatorTLS {
                    var settings = sandboxAPNs
                    settings.topic = apps[index].apns?.topic ?? settings.topic
                    settings.key = sandboxKey
                    settings.caFile = simulatorTLS.caFile
                    apps[index].endpoint = simulatorTLS.front.baseURL
                    apps[index].apns = settings
                } else if apps[index].provider == .fcmV1 {
                    apps[index].endpoint = "http://\(address)"
                    apps[index].serviceAccount = sandboxAccount
                    apps[index].projectID = sandboxAccount?.projectID
                    apps[index].tokenURI = "http://\(address)\(FCMSimulator.tokenPath)"
                } else {
                    apps[index].endpoint = endpoint
                    apps[index].serverKey = "sandbox"
                }
            }
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
        let tokenPool = apps.contains { $0.provider == .fcmV1 }
            ? HTTPClientPool(maxConnectionsPerHost: 2, name: "oauth") : nil
        self.tokenPool = tokenPool
        var options = DeliveryEngine.Options()
        options.leaseMillis = configuration.leaseMillis
        options.liveness = configuration.liveness
        options.sharedQueue = database.isShared
        engine = DeliveryEngine(writer: writer, apps: try apps.map { app in
            let provider: any Provider
            if app.provider == .fcmV1, let account = app.serviceAccount, let projectID = app.projectID,
               let tokenURI = app.tokenURI, let tokenPool {
                provider = V1Provider(app: app.name, account: account, projectID: projectID, endpoint: app.endpoint,
                                      tokenURI: tokenURI, tokenPool: tokenPool,
                                      timeoutMillis: configuration.requestTimeoutMillis)
                Log.info("fcm v1 app", [
                    "app": .string(app.name), "project": .string(projectID),
                    "client_email": .string(account.clientEmail),
                    "endpoint": .string(app.endpoint), "token_uri": .string(tokenURI),
                ])
            } else if app.provider == .apns, let apns = app.apns, let certificate = apns.certificate {
                provider = APNsProvider(
                    app: app.name, certificate: certificate, topic: apns.topic, endpoint: app.endpoint,
                    timeoutMillis: configuration.requestTimeoutMillis, caFile: apns.caFile)
                Log.info("apns app", [
                    "app": .string(app.name), "topic": .string(apns.topic),
                    "certificate": .string(certificate.subjectCommonName ?? "-"),
                    "certificate_sha256": .string(certificate.sha256Fingerprint),
                    "certificate_expires": .string(Output.time(certificate.notAfterMillis)),
                    "endpoint": .string(app.endpoint),
                ])
            } else if app.provider == .apns, let apns = app.apns, let key = apns.key {
                provider = APNsProvider(
                    app: app.name, key: key, keyID: apns.keyID, teamID: apns.teamID, topic: apns.topic,
                    endpoint: app.endpoint, timeoutMillis: configuration.requestTimeoutMillis, caFile: apns.caFile)
                Log.info("apns app", [
                    "app": .string(app.name), "topic": .string(apns.topic), "key_id": .string(apns.keyID),
                    "team_id": .string(apns.teamID), "endpoint": .string(app.endpoint),
                ])
            } else if app.provider == .webPush, let webPush = app.webPush, let key = webPush.key {
                let vapid = try VAPID(key: key, subject: webPush.subject)
                provider = WebPushProvider(
                    app: app.name, vapid: vapid, redirect: app.endpoint.isEmpty ? nil : app.endpoint,
                    timeoutMillis: configuration.requestTimeoutMillis, caFile: webPush.caFile,
                    allowsPrivateEndpoints: webPush.endpoints.addresses.allowsPrivate,
                    connectionLimit: webPush.maxConnections)
                Log.info("webpush app", [
                    "app": .string(app.name), "subject": .string(webPush.subject),
                    "max_connections": .int(Int64(webPush.maxConnections)),
                    "application_server_key": .string(vapid.publicKeyText),
                    "endpoint": .string(app.endpoint.isEmpty ? "each subscription's" : app.endpoint),
                ])
            } else {
                provider = LegacyProvider(
                    app: app.name, endpoint: app.endpoint, serverKey: app.serverKey ?? "",
                    timeoutMillis: configuration.requestTimeoutMillis)
            }
            return DeliveryEngine.App(
                name: app.name, provider: provider, concurrency: app.concurrency, maxRate: app.maxRate,
                originConcurrency: app.webPush?.originConcurrency ?? WebPushSettings.defaultOriginConcurrency)
        }, metrics: metrics, options: options)
        webhooks = configuration.outcomeWebhooks.isEmpty ? nil : OutcomeWebhookSender(
            webhooks: configuration.outcomeWebhooks, writer: writer, readers: readers, metrics: metrics,
            options: .init(retentionMillis: configuration.tokenEventRetentionMillis))
        let (stopping, engine) = (self.stopping, self.engine)
        // Wrong tokens count against a client's address whether sent to ingest, the console's API or its login.
        let guesses = GuessThrottle()
        let api = IngestAPI(
            writer: database.ingestWriter, readers: readers, apiToken: configuration.apiToken,
            knownApps: Set(configuration.apps.map(\.name)),
            // The sandbox's simulator takes any project, so a backend can keep its real project id in the URL.
            projects: configuration.sandbox ? [:] : Self.projects(of: configuration.apps),
            providers: Dictionary(apps.map { ($0.name, $0.provider) }, uniquingKeysWith: { first, _ in first }),
            endpointPolicies: Dictionary(
                apps.compactMap { app in app.webPush.map { (app.name, $0.endpoints) } },
                uniquingKeysWith: { first, _ in first }),
            guesses: guesses, metrics: metrics,
            isShuttingDown: { stopping.isSet }, committed: { engine.wake() })
        let admin = AdminAPI(
            writer: writer, readers: readers,
            access: ConsoleAccess(
                apiToken: configuration.apiToken, readOnlyToken: configuration.consoleReadOnlyToken, guesses: guesses),
            providers: Dictionary(
                apps.map { ($0.name, $0.provider.rawValue) }, uniquingKeysWith: { first, _ in first }),
            credentials: configuration.credentialFacts, metrics: metrics, history: history, snapshot: statusSnapshot,
            committed: { engine.wake() })
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
        database.startWakeUps { [engine] in engine.wake() }
        webhooks?.start()
        refreshGauges()
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
        engine.stop(gracePeriod: 10)
        webhooks?.stop(gracePeriod: 2)
        tokenPool?.shutdown(gracePeriod: 0)
        simulator?.shutdown(gracePeriod: 1)
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

    /// FCM project id → app, for the drop-in v1 endpoint; the first app wins a project id given twice.
    static func projects(of apps: [AppConfiguration]) -> [String: String] {
        var projects: [String: String] = [:]
        for app in apps {
            if let project = app.projectID, projects[project] == nil { projects[project] = app.name }
        }
        return projects
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

/// Set once when the service begins to stop; read from any thread.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
