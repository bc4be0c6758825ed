import Synchronization

/// What ingest knows of the apps: which exist, which FCM project is whose, what each provider can address. Replaced
/// whole when an app is added, changed or removed while `serve` runs (SPEC §22); each request reads it once.
public final class IngestApps: Sendable {
    public struct Routes: Sendable {
        /// The apps `serve` delivers for; nil: any app (tests).
        public var knownApps: Set<String>?
        /// FCM project id → app, for `/v1/projects/{project}/messages:send`.
        public var projects: [String: String]
        /// What each app's provider can address (its folder's `AddressingRules`).
        public var addressing: [String: any AddressingRules]

        public init(
            knownApps: Set<String>?, projects: [String: String], addressing: [String: any AddressingRules]
        ) {
            (self.knownApps, self.projects, self.addressing) = (knownApps, projects, addressing)
        }
    }

    private let routes: Mutex<Routes>

    public init(_ routes: Routes) { self.routes = Mutex(routes) }

    public var current: Routes { routes.withLock { $0 } }

    public func replace(_ routes: Routes) { self.routes.withLock { $0 = routes } }
}
