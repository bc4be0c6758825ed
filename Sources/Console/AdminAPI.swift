import HTTP
import Ingest
import Queue
import Support

/// The console's JSON API under `/v1/admin/` (SPEC §18), which scripts may use too. Each call runs the same store
/// operations as the CLI command it mirrors: reads on the reader pool, writes as jobs of the group-commit writer,
/// never on the event loop. Requeue and purge of "all that match" go one bounded chunk per request, so no request
/// holds the writer for long and ingest goes on between chunks.
///
/// Access (tokens, logins, same-origin checks) is `ConsoleAccess`'s, decided before a request gets here.
public final class AdminAPI: Sendable {
    public static let bodyLimit = 1 << 20
    /// Rows a chunk of requeue or purge touches by default, and at most.
    public static let defaultChunk = 1000
    public static let maximumChunk = 5000
    /// Dead letters a page lists by default, and at most.
    public static let defaultPage = 50
    public static let maximumPage = 500

    let writer: any StoreWriter
    let readers: any StoreReaders
    let access: ConsoleAccess
    /// Configured app → provider (`fcm-v1`, `fcm-legacy`, `apns`, `webpush`); the database knows the apps, not
    /// their providers.
    let providers: [String: String]
    /// The secrets key's id and the apps' certificates, for the overview.
    let credentials: CredentialFacts
    let metrics: Metrics
    let history: RateHistory
    let snapshot: StatusSnapshot
    let committed: @Sendable () -> Void

    /// - Parameters:
    ///   - snapshot: the latest count of the backlog, which the gauges' refresh keeps (see `overview`).
    ///   - committed: called after a requeue committed, to wake the claimer (as ingest does).
    public init(
        writer: any StoreWriter, readers: any StoreReaders, access: ConsoleAccess, providers: [String: String],
        credentials: CredentialFacts = CredentialFacts(), metrics: Metrics, history: RateHistory,
        snapshot: StatusSnapshot = StatusSnapshot(),
        committed: @escaping @Sendable () -> Void = {}
    ) {
        self.writer = writer
        self.readers = readers
        self.access = access
        self.providers = providers
        self.credentials = credentials
        self.metrics = metrics
        self.history = history
        self.snapshot = snapshot
        self.committed = committed
    }

    /// Answers a request to `/v1/admin/…` that `ConsoleAccess` let through.
    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        let now = Clock.nowMillis()
        let path = Array(request.pathSegments.dropFirst(2))
        switch (request.method, path.first ?? "", path.count) {
        case ("GET", "session", 1): session(request, now: now, responder)
        case ("GET", "overview", 1): overview(now: now, responder)
        case ("GET", "dead", 1): deadLetters(request, now: now, responder)
        case ("GET", "dead", 2) where path[1] == "summary": deadLetterSummary(request, now: now, responder)
        case ("GET", "dead", 2): deadLetter(path[1], now: now, responder)
        case ("POST", "dead", 2) where path[1] == "requeue" || path[1] == "purge":
            changeDeadLetters(request, requeue: path[1] == "requeue", now: now, responder)
        case ("GET", "messages", 2): message(path[1], responder)
        case ("POST", "messages", 3) where path[2] == "cancel": cancel(path[1], now: now, responder)
        case ("GET", "tokens", 2): token(path[1], now: now, responder)
        case ("GET", "users", 2): user(path[1], responder)
        case ("GET", "token-events", 1): tokenEvents(request, responder)
        case ("POST", "apps", 3) where path[2] == "pause" || path[2] == "resume":
            switchApp(path[1], pause: path[2] == "pause", request, now: now, responder)
        case (_, "session", 1), (_, "overview", 1), (_, "dead", 1), (_, "dead", 2), (_, "messages", 2),
             (_, "messages", 3), (_, "tokens", 2), (_, "users", 2), (_, "token-events", 1), (_, "apps", 3):
            responder.respond(Self.error(APIError(
                status: 405, code: "MethodNotAllowed", message: "\(request.method) is not allowed on \(request.path)")))
        default:
            responder.respond(Self.error(APIError(
                status: 404, code: "NotFound", message: "no such endpoint: \(request.path)")))
        }
    }

    private func session(_ request: HTTPRequest, now: Int64, _ responder: any HTTPResponder) {
        let role = access.role(of: request, now: now) ?? .readOnly
        responder.respond(Self.json(200, [
            "role": .string(role.rawValue), "login_required": .bool(access.needsLogin), "at": .int(now),
        ]))
    }

    // MARK: - Answers

    /// JSON that is never cached (it is the state of the queue, and may hold tokens and payloads).
    static func json(_ status: Int, _ body: JSON) -> HTTPResponse {
        .json(status, body.serialized(), headers: headers)
    }

    static func error(_ failure: APIError) -> HTTPResponse {
        .json(failure.status, failure.jsonBody, headers: headers)
    }

    private static let headers = [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")]

    static func invalid(_ message: String) -> HTTPResponse {
        error(APIError(status: 400, code: "InvalidParameters", message: message))
    }

    static func notFound(_ kind: String, _ id: String) -> HTTPResponse {
        error(APIError(status: 404, code: "NotFound", message: "no \(kind) \(id)"))
    }

    /// The storage failed: 503 with `Retry-After`, the failure in the log (never in the body).
    static func unavailable(_ failure: Error) -> HTTPResponse {
        Log.warn("storage unavailable", ["error": .string("\(failure)")])
        var response = error(APIError(
            status: 503, code: "Unavailable", message: "the database is unavailable; retry later"))
        response.headers.append(("Retry-After", "1"))
        return response
    }

    /// Answers `result` with `success`, or 503.
    static func answer<T>(
        _ result: Result<T, Error>, _ responder: any HTTPResponder, _ success: (T) -> HTTPResponse
    ) {
        switch result {
        case .success(let value): responder.respond(success(value))
        case .failure(let failure): responder.respond(unavailable(failure))
        }
    }
}
