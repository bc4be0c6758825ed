import Queue
import Support
import Synchronization

/// The per-tenant API tokens one `serve` honours (SPEC §22), in memory, by the SHA-256 of their secret: checking a
/// presented token is one hash and one dictionary look-up, never a database read on the event loop.
///
/// The table is read again every `refreshMillis` (`refresh`), so a token made or revoked by another instance or by
/// `herald api-tokens` holds here within that time (SPEC: within 5 s). A token made or revoked through this
/// instance's `/v1/admin/api-tokens` holds here from the next request (`add`, `revoke`); a refresh that read the
/// table before such a change is dropped (the next one reads it after), so it cannot bring a revoked token back.
///
/// Each use is noted in the grant (an atomic store, at most once a second per token) and `refresh` writes the uses
/// since the last one as `last_used_at`, in one write job: never a write per request.
///
/// The look-up compares digests, not secrets: knowing how much of a digest matched says nothing about a secret
/// (finding a secret with a given digest prefix is as hard as guessing it), so it needs no constant-time compare.
public final class APITokens: Sendable {
    public static let refreshMillis: Int64 = 2000

    /// What a token may do: its role, for its apps.
    public final class Grant: Sendable {
        public let id: String
        public let role: APITokenRole
        public let apps: [String]
        /// Unix ms of the latest use noted, and of the latest written to the database.
        fileprivate let lastUsed = Atomic<Int64>(0)
        fileprivate let lastWritten = Atomic<Int64>(0)

        init(_ record: APITokenRecord) {
            (id, role, apps) = (record.id, record.role, record.apps)
        }

        /// The app of a request that names none: the token's only app; nil when it has several.
        public var onlyApp: String? { apps.count == 1 ? apps[0] : nil }

        public func allows(_ app: String) -> Bool { apps.contains(app) }

        /// The app a request acts for: the one it names, or, when it names none, the token's only app. Refused:
        /// an app not among the token's (403 `Forbidden`), and no app named when the token has several (400).
        public func app(named: String?) -> Result<String, APIError> {
            guard let app = named ?? onlyApp else {
                return .failure(.invalidParameters(
                    "this API token acts for \(appsText): name the app (\"app\", or X-Herald-App for /fcm/send)"))
            }
            return allows(app) ? .success(app) : .failure(refusal(app))
        }

        /// 403 for a request that acts for `app`, not among the token's.
        public func refusal(_ app: String) -> APIError {
            .forbidden("this API token acts for \(appsText) only, not for \"\(app.prefix(100))\"")
        }

        private var appsText: String {
            apps.count == 1 ? "app \"\(apps[0])\"" : "apps " + apps.map { "\"\($0)\"" }.joined(separator: ", ")
        }

        fileprivate func noteUse(at now: Int64) {
            if now - lastUsed.load(ordering: .relaxed) >= 1000 { lastUsed.store(now, ordering: .relaxed) }
        }
    }

    private struct Table {
        var byDigest: [[UInt8]: Grant] = [:]
        /// Tokens added or revoked through this instance so far.
        var changes = 0
    }

    private let table = Mutex(Table())
    private let clock: @Sendable () -> Int64

    /// - Parameter clock: milliseconds since the epoch, for `last_used_at`; tests move it by hand.
    public init(_ records: [APITokenRecord] = [], clock: @escaping @Sendable () -> Int64 = Clock.nowMillis) {
        self.clock = clock
        load(records)
    }

    /// The grant of the token whose secret is `presented`, noting the use; nil when it is not a token's secret, or
    /// the token is unknown or revoked.
    public func grant(for presented: [UInt8]) -> Grant? {
        guard let digest = APITokenSecret.digest(presented),
              let grant = table.withLock({ $0.byDigest[digest] })
        else { return nil }
        grant.noteUse(at: clock())
        return grant
    }

    /// Replaces the table with the active tokens just read. A token kept keeps its grant (and its uses not yet
    /// written).
    public func load(_ active: [APITokenRecord]) {
        table.withLock { load(active, into: &$0) }
    }

    /// `load`, unless a token was added or revoked here since the read began (`changes` was `seen` then).
    private func load(_ active: [APITokenRecord], ifUnchangedSince seen: Int) {
        table.withLock { table in
            guard table.changes == seen else { return }
            load(active, into: &table)
        }
    }

    private func load(_ active: [APITokenRecord], into table: inout Table) {
        let current = Dictionary(table.byDigest.values.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var byDigest: [[UInt8]: Grant] = [:]
        for record in active where record.revokedAt == nil {
            guard let digest = APITokenSecret.digest(hex: record.secretSHA256) else { continue }
            byDigest[digest] = current[record.id] ?? Grant(record)
        }
        table.byDigest = byDigest
    }

    /// A token made through this instance: honoured from now on.
    public func add(_ record: APITokenRecord) {
        guard let digest = APITokenSecret.digest(hex: record.secretSHA256) else { return }
        table.withLock { table in
            table.byDigest[digest] = Grant(record)
            table.changes += 1
        }
    }

    /// A token revoked through this instance: refused from now on.
    public func revoke(id: String) {
        table.withLock { table in
            table.byDigest = table.byDigest.filter { $0.value.id != id }
            table.changes += 1
        }
    }

    /// The uses noted since the last call, one per token: its latest.
    public func takeUses() -> [(id: String, at: Int64)] {
        table.withLock { table in
            table.byDigest.values.compactMap { grant in
                let used = grant.lastUsed.load(ordering: .relaxed)
                guard used > grant.lastWritten.load(ordering: .relaxed) else { return nil }
                grant.lastWritten.store(used, ordering: .relaxed)
                return (grant.id, used)
            }
        }
    }

    /// Writes the uses noted since the last refresh (one job, only when there are some), then reads the active
    /// tokens again; `completion` runs after both, on a database thread. A failure leaves the table as it was and
    /// is logged: the next refresh tries again.
    public func refresh(
        readers: any StoreReaders, writer: any StoreWriter, completion: @escaping @Sendable () -> Void = {}
    ) {
        let uses = takeUses()
        if !uses.isEmpty {
            writer.enqueue(durable: false, { try $0.markAPITokensUsed(uses) }) { result in
                if case .failure(let failure) = result {
                    Log.warn("writing api tokens' last_used_at failed", ["error": .string("\(failure)")])
                }
            }
        }
        let seen = table.withLock { $0.changes }
        readers.enqueue({ try $0.apiTokens(activeOnly: true) }) { [self] result in
            switch result {
            case .success(let active): load(active, ifUnchangedSince: seen)
            case .failure(let failure):
                Log.warn("reading api tokens failed; keeping the ones read before", ["error": .string("\(failure)")])
            }
            completion()
        }
    }
}
