import Foundation
import HTTP
import OAuth
import Queue
import Support

/// The HTTP API of SPEC §3: validates on the event loop, stores through the group-commit writer, reads through
/// the reader pool, and answers only after the commit.
public final class IngestAPI: HTTPHandler {
    public static let bodyLimit = 1 << 20
    public static let batchBodyLimit = 16 << 20

    private let writer: any StoreWriter
    private let readers: any StoreReaders
    private let apiToken: [UInt8]?
    private let tenants: APITokens
    private let isShuttingDown: @Sendable () -> Bool
    private let intake: MessageIntake
    private let fcmSend: FCMSendEndpoint
    private let fcmV1Send: FCMV1SendEndpoint
    /// The apps, their projects and addressing rules, as `serve` replaces them when apps change at run time.
    public let apps: IngestApps
    private var knownApps: Set<String>? { apps.current.knownApps }
    private var projects: [String: String] { apps.current.projects }
    private var addressing: [String: any AddressingRules] { apps.current.addressing }
    private let maxWriterBacklog: Int
    private let guesses: GuessThrottle

    /// - Parameters:
    ///   - apiToken: when set, every call but `/healthz` and `/readyz` needs `Authorization: Bearer <token>`
    ///     (`/fcm/send` also takes FCM's `key=<token>`): this admin token, or a per-tenant token of `tenants`.
    ///   - tenants: the per-tenant API tokens (SPEC §22), each limited to the routes of its role (`RouteAccess`)
    ///     and to its apps. Honoured only with `apiToken`: without one every caller may do everything.
    ///   - isShuttingDown: makes `/readyz` answer 503 while the service stops.
    ///   - committed: called after messages were committed (wakes the claimer).
    ///   - knownApps: the apps `serve` delivers for; a message to another app is refused rather than queued
    ///     forever. Nil accepts any app.
    ///   - maxWriterBacklog: writes waiting for the writer thread beyond which new messages get 503 with
    ///     `Retry-After` instead of queueing in memory without bound.
    ///   - projects: FCM project id → app, for `/v1/projects/{project}/messages:send`. Empty: every project goes to
    ///     app `default` (no app has a project id).
    ///   - addressing: what each app's provider can address (its folder's `AddressingRules`): what it cannot is
    ///     refused, and so is a token it cannot register. An app not named is refused nothing here.
    ///   - guesses: who presented wrong tokens lately; shared with the console's logins.
    public init(
        writer: any StoreWriter, readers: any StoreReaders, apiToken: String?, tenants: APITokens = APITokens(),
        knownApps: Set<String>? = nil, projects: [String: String] = [:],
        addressing: [String: any AddressingRules] = [:],
        maxWriterBacklog: Int = 20_000, guesses: GuessThrottle = GuessThrottle(), metrics: Metrics = .herald(),
        isShuttingDown: @escaping @Sendable () -> Bool = { false },
        committed: @escaping @Sendable () -> Void = {}
    ) {
        apps = IngestApps(IngestApps.Routes(knownApps: knownApps, projects: projects, addressing: addressing))
        self.maxWriterBacklog = maxWriterBacklog
        self.guesses = guesses
        self.writer = writer
        self.readers = readers
        self.apiToken = apiToken.map { Array($0.utf8) }
        self.tenants = tenants
        self.isShuttingDown = isShuttingDown
        let intake = MessageIntake(writer: writer, metrics: metrics, committed: committed)
        self.intake = intake
        self.fcmSend = FCMSendEndpoint(intake: intake)
        self.fcmV1Send = FCMV1SendEndpoint(intake: intake)
    }

    public func bodyLimit(method: String, path: String) -> Int {
        // Asked for every request with a body: compared as bytes unless percent-encoding needs the segments.
        let batch = path.utf8.contains(UInt8(ascii: "%"))
            ? HTTPRequest.pathSegments(of: path) == ["v1", "messages", "batch"] : path == "/v1/messages/batch"
        return batch ? Self.batchBodyLimit : Self.bodyLimit
    }

    /// The server asks this with the head alone, before any of the body is read or `100 Continue` is sent, so
    /// a caller without the token never gets a body buffered.
    public func admit(_ head: HTTPRequest) -> HTTPResponse? {
        guard case .failure(let refusal) = authorize(head) else { return nil }
        return refusal.response
    }

    /// A request refused by `authorize`, with its answer.
    struct Refusal: Error {
        var response: HTTPResponse
    }

    /// The one place tokens are checked: the caller when `request` may go on — nil for the admin (the admin token,
    /// or anyone when `serve` has none), else a tenant's grant — or the answer in the shape the route's clients
    /// read: FCM legacy's for `/fcm/send` (which also takes `key=<token>`), FCM v1's for
    /// `/v1/projects/{project}/messages:send`, Herald's error body for the rest. 401 for a missing or wrong token,
    /// 429 for an address that guessed too often, 403 for a tenant's token outside its role, or outside its apps
    /// where the head names the app (`RouteAccess`). Only the head is looked at: a route that names its app in the
    /// body or a record checks the grant again once that is read.
    func authorize(_ request: HTTPRequest) -> Result<APITokens.Grant?, Refusal> {
        guard apiToken != nil else { return .success(nil) }
        let segments = request.pathSegments
        let dialect: Dialect
        switch (request.method, segments) {
        case ("GET", ["healthz"]), ("GET", ["readyz"]):
            return .success(nil)
        case (_, ["fcm", "send"]):
            // FCM's client libraries send `Authorization: key=<server key>` and read FCM's own error answers.
            dialect = .fcmLegacy
        case _ where FCMV1SendEndpoint.project(in: segments) != nil:
            // The Admin SDKs raise their typed errors from v1's shape.
            dialect = .fcmV1
        default:
            dialect = .herald
        }
        switch checkToken(request, fcmCompatible: dialect == .fcmLegacy) {
        case .passed(let grant?):
            guard let refusal = refusal(of: grant, request, segments) else { return .success(grant) }
            return .failure(Refusal(response: answer(refusal, in: dialect)))
        case .passed(nil):
            return .success(nil)
        case .refused:
            switch dialect {
            case .fcmLegacy: return .failure(Refusal(response: FCMSendEndpoint.unauthorized))
            case .fcmV1: return .failure(Refusal(response: FCMV1SendEndpoint.unauthorized))
            case .herald:
                return .failure(Refusal(response: error(
                    .unauthorized("missing or wrong API token"), headers: [("WWW-Authenticate", "Bearer")])))
            }
        case .throttled(let seconds):
            return .failure(Refusal(response: answer(
                .tooManyWrongTokens(retryAfterSeconds: seconds), in: dialect,
                headers: [("Retry-After", String(seconds))])))
        }
    }

    /// Why a tenant's token may not make `request`, as far as its head tells; nil when it may go on.
    private func refusal(of grant: APITokens.Grant, _ request: HTTPRequest, _ segments: [String]) -> APIError? {
        guard let route = RouteAccess.of(method: request.method, segments: segments) else {
            return .forbidden("\(request.method) \(request.path) needs the admin token")
        }
        guard route.role == grant.role else {
            return .forbidden("this API token has role \(grant.role.rawValue); \(request.method) \(request.path) "
                + "needs role \(route.role.rawValue)")
        }
        switch route.app {
        case .header(let name):
            guard case .failure(let refusal) = grant.app(named: request.header(name)) else { return nil }
            return refusal
        case .project:
            // An unknown project is the handler's 404.
            guard let app = FCMV1SendEndpoint.project(in: segments).flatMap(app(ofProject:)), !grant.allows(app)
            else { return nil }
            return grant.refusal(app)
        case .body, .record, .feed:
            return nil
        }
    }

    /// Whose error shape a route answers in.
    private enum Dialect {
        case herald, fcmLegacy, fcmV1
    }

    private func answer(
        _ failure: APIError, in dialect: Dialect, headers: [(name: String, value: String)] = []
    ) -> HTTPResponse {
        switch dialect {
        case .fcmLegacy: FCMSendEndpoint.refused(failure, headers: headers)
        case .fcmV1: FCMV1SendEndpoint.response(failure, headers: headers)
        case .herald: error(failure, headers: headers)
        }
    }

    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        // The server has asked `admit` already; this covers a request handed here any other way, and names the
        // caller: nil for the admin, else the tenant's grant.
        let tenant: APITokens.Grant?
        switch authorize(request) {
        case .failure(let refusal): return responder.respond(refusal.response)
        case .success(let grant): tenant = grant
        }
        let path = request.path
        let segments = request.pathSegments
        switch (request.method, segments.first ?? "") {
        case ("GET", "healthz") where segments.count == 1:
            return responder.respond(.json(200, #"{"status":"ok"}"#))
        case ("GET", "readyz") where segments.count == 1:
            return ready(responder)
        case (_, "v1") where FCMV1SendEndpoint.project(in: segments) != nil:
            // The drop-in for FCM HTTP v1 answers everything, refusals included, in v1's shape.
            return fcmV1Send(request, project: FCMV1SendEndpoint.project(in: segments) ?? "", responder)
        case ("POST", _) where writer.backlog >= maxWriterBacklog:
            // The writer is behind: refuse now, cheaply, rather than hold requests in memory without bound.
            return responder.respond(error(
                APIError(status: 503, code: "Unavailable", message: "the database is behind; retry later"),
                headers: [("Retry-After", "1")]))
        case (_, "fcm") where segments == ["fcm", "send"]:
            guard request.method == "POST" else { return responder.respond(FCMSendEndpoint.methodNotAllowed) }
            // A tenant's request without X-Herald-App is for the token's only app (`authorize` refused it else).
            let app = request.header("x-herald-app") ?? tenant?.onlyApp
            if let unknown = unknownApp(app ?? MessageValidator.defaultApp) {
                return responder.respond(FCMSendEndpoint.refused(unknown))
            }
            return fcmSend.handle(request, app: app, responder: responder)
        case ("GET", "metrics") where segments.count == 1:
            return responder.respond(HTTPResponse(
                status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                body: Array(intake.metrics.render().utf8)))
        default:
            break
        }
        // Routes: /v1/<resource>[/<id>[/...]]
        let resource = segments.count >= 2 && segments[0] == "v1" ? segments[1] : ""
        let id = segments.count == 3 && !segments[2].isEmpty ? segments[2] : nil
        switch (request.method, resource, segments.count, id) {
        case ("POST", "messages", 2, _): postMessage(request, tenant, responder)
        case ("POST", "messages", 3, "batch"): postBatch(request, tenant, responder)
        case ("GET", "messages", 3, let id?): getMessage(id, tenant, responder)
        case ("DELETE", "messages", 3, let id?): cancelMessage(id, tenant, responder)
        case ("PUT", "tokens", 3, let token?): putToken(token, request, tenant, responder)
        case ("GET", "tokens", 3, let token?): getToken(token, tenant, responder)
        case ("DELETE", "tokens", 3, let token?): deleteToken(token, tenant, responder)
        case ("GET", "token-events", 2, _): tokenEvents(request, tenant, responder)
        case ("GET", "outcomes", 2, _): outcomes(request, tenant, responder)
        case ("PUT", "subscriptions", 2, _): putSubscription(request, tenant, responder)
        case (_, "messages", 2, _), (_, "messages", 3, _?), (_, "tokens", 3, _?), (_, "token-events", 2, _),
             (_, "outcomes", 2, _), (_, "subscriptions", 2, _):
            responder.respond(error(APIError(
                status: 405, code: "MethodNotAllowed", message: "\(request.method) is not allowed on \(path)")))
        default:
            responder.respond(error(APIError(status: 404, code: "NotFound", message: "no such endpoint: \(path)")))
        }
    }

    // MARK: - Messages

    private func fcmV1Send(_ request: HTTPRequest, project: String, _ responder: any HTTPResponder) {
        guard request.method == "POST" else { return responder.respond(FCMV1SendEndpoint.methodNotAllowed) }
        guard let app = app(ofProject: project) else {
            return responder.respond(FCMV1SendEndpoint.notFound(project: project))
        }
        guard writer.backlog < maxWriterBacklog else { return responder.respond(FCMV1SendEndpoint.unavailable) }
        fcmV1Send.handle(
            request, project: project, app: app, admit: { [self] in unknownApp($0.app) ?? refusal(of: $0) },
            responder: responder)
    }

    private func postMessage(_ request: HTTPRequest, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        let key = request.header("idempotency-key")
        if let key, key.isEmpty || key.utf8.count > 255 {
            return responder.respond(error(APIError(
                status: 400, code: "InvalidParameters", message: "Idempotency-Key must be 1 to 255 bytes")))
        }
        switch MessageValidator.validate(body: request.body).flatMap({ scoped($0, for: tenant) }).flatMap(checkApp) {
        case .failure(let failure):
            responder.respond(error(failure))
        case .success(let message):
            intake.store(message.stored(idempotencyKey: key)) { result in
                switch result {
                case .success(let accepted):
                    responder.respond(.json(202, Self.acceptedJSON(accepted).serialized()))
                case .failure(let conflict as IdempotencyConflict):
                    responder.respond(.json(409, APIError.idempotencyConflict(conflict).jsonBody))
                case .failure(let failure):
                    responder.respond(Self.unavailable(failure))
                }
            }
        }
    }

    private func postBatch(_ request: HTTPRequest, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        switch MessageValidator.validateBatch(body: request.body) {
        case .failure(let failure):
            responder.respond(error(failure))
        case .success(let validated):
            let scopedItems = validated.map { $0.flatMap { scoped($0, for: tenant) } }
            // An item for an app outside the token's refuses the whole batch: nothing is stored.
            for case .failure(let refusal) in scopedItems where refusal.status == 403 {
                return responder.respond(error(refusal))
            }
            let items = scopedItems.map { $0.flatMap(checkApp) }
            let messages = items.map { try? $0.get().stored(idempotencyKey: nil) }
            intake.store(messages) { result in
                switch result {
                case .success(let accepted):
                    let results: [JSON] = zip(items, accepted).map { item, stored in
                        switch (item, stored) {
                        case (.failure(let failure), _): failure.json
                        case (.success, let stored?): Self.acceptedJSON(stored)
                        case (.success, nil): APIError.unavailable("not stored").json
                        }
                    }
                    responder.respond(.json(200, JSON.object([("results", .array(results))]).serialized()))
                case .failure(let failure):
                    responder.respond(Self.unavailable(failure))
                }
            }
        }
    }

    private func getMessage(_ id: String, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        readers.enqueue({ try $0.message(id: id) }) { [self] result in
            switch result {
            case .success(let record?):
                if let tenant, !tenant.allows(record.app) {
                    return responder.respond(error(tenant.refusal(record.app)))
                }
                responder.respond(.json(200, Self.messageJSON(record).serialized()))
            case .success(nil): responder.respond(Self.notFound("message", id))
            case .failure(let failure): responder.respond(Self.unavailable(failure))
            }
        }
    }

    private func cancelMessage(_ id: String, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        writer.enqueue(durable: true, writesOutcomes: true, { store -> Result<Int?, APIError> in
            if let tenant, let app = try store.claimedMessage(id: id)?.app, !tenant.allows(app) {
                return .failure(tenant.refusal(app))
            }
            return .success(try store.cancelMessage(id: id, now: Clock.nowMillis()))
        }) { [self] result in
            switch result {
            case .success(.success(let cancelled?)):
                let body = JSON.object([("id", .string(id)), ("cancelled", .int(Int64(cancelled)))])
                responder.respond(.json(200, body.serialized()))
            case .success(.success(nil)): responder.respond(Self.notFound("message", id))
            case .success(.failure(let refusal)): responder.respond(error(refusal))
            case .failure(let failure): responder.respond(Self.unavailable(failure))
            }
        }
    }

    // MARK: - Token registry

    private func putToken(
        _ token: String, _ request: HTTPRequest, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder
    ) {
        let registration: (app: String, user: String?)
        switch TokenRegistration.validate(token: token, body: request.body).flatMap({ named in
            app(named: named.app, for: tenant).map { ($0, named.user) }
        }) {
        case .failure(let failure): return responder.respond(error(failure))
        case .success(let valid): registration = valid
        }
        if let refusal = addressing[registration.app]?.registrationRefusal(of: token, app: registration.app) {
            return responder.respond(error(refusal))
        }
        register(token, app: registration.app, user: registration.user, tenant, responder)
    }

    /// `PUT /v1/subscriptions`: a browser's subscription registered as a token of a Web Push app (SPEC §16).
    private func putSubscription(_ request: HTTPRequest, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        let registration: (token: String, app: String, user: String?)
        switch SubscriptionRegistration.validate(body: request.body).flatMap({ named in
            app(named: named.app, for: tenant).map { (named.token, $0, named.user) }
        }) {
        case .failure(let failure): return responder.respond(error(failure))
        case .success(let valid): registration = valid
        }
        if let unknown = unknownApp(registration.app) { return responder.respond(error(unknown)) }
        if let refusal = addressing[registration.app]?.registrationRefusal(
            of: registration.token, app: registration.app)
        {
            return responder.respond(error(refusal))
        }
        register(registration.token, app: registration.app, user: registration.user, tenant, responder)
    }

    /// Writes the registration and answers it: 201 for a new token, 200 for one registered before. A tenant may
    /// not move a token registered to an app outside its own.
    private func register(
        _ token: String, app: String, user: String?, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder
    ) {
        writer.enqueue({ store -> Result<(TokenRecord, created: Bool), APIError> in
            if let tenant, let registered = try store.registeredApp(of: token), !tenant.allows(registered) {
                return .failure(Self.registeredElsewhere)
            }
            return .success(try store.upsertToken(token, app: app, user: user, now: Clock.nowMillis()))
        }) { [self] result in
            switch result {
            case .success(.success(let (record, created))):
                responder.respond(.json(created ? 201 : 200, Self.tokenJSON(record).serialized()))
            case .success(.failure(let refusal)):
                responder.respond(error(refusal))
            case .failure(let failure):
                responder.respond(Self.unavailable(failure))
            }
        }
    }

    private func getToken(_ token: String, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        readers.enqueue({ try $0.token(token) }) { [self] result in
            switch result {
            case .success(let record?):
                if let tenant, !tenant.allows(record.app) { return responder.respond(error(Self.registeredElsewhere)) }
                responder.respond(.json(200, Self.tokenJSON(record).serialized()))
            case .success(nil): responder.respond(Self.notFound("token", token))
            case .failure(let failure): responder.respond(Self.unavailable(failure))
            }
        }
    }

    private func deleteToken(_ token: String, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        writer.enqueue({ store -> Result<Bool, APIError> in
            if let tenant, let registered = try store.registeredApp(of: token), !tenant.allows(registered) {
                return .failure(Self.registeredElsewhere)
            }
            return .success(try store.deleteToken(token))
        }) { [self] result in
            switch result {
            case .success(.success(true)): responder.respond(HTTPResponse(status: 204))
            case .success(.success(false)): responder.respond(Self.notFound("token", token))
            case .success(.failure(let refusal)): responder.respond(error(refusal))
            case .failure(let failure): responder.respond(Self.unavailable(failure))
            }
        }
    }

    /// A feed's page as the query names it (`after` exclusive, default 0; `limit` 1…1000, default 100); nil, with
    /// the 400 answered, when either is malformed.
    private func feedPage(_ request: HTTPRequest, _ responder: any HTTPResponder) -> (after: Int64, limit: Int)? {
        let query = request.query
        let after = query["after"].map { Int64($0) } ?? 0
        let limit = query["limit"].map { Int($0) } ?? 100
        guard let after, after >= 0, let limit, (1...1000).contains(limit) else {
            responder.respond(error(APIError(
                status: 400, code: "InvalidParameters",
                message: "after must be a non-negative integer and limit an integer in 1...1000")))
            return nil
        }
        return (after, limit)
    }

    /// `GET /v1/outcomes?after=&app=&limit=`: every delivery's final state in commit order (SPEC §23). A tenant reads
    /// its apps' only: the app it names, or its only app (one with several names one with `app=`).
    private func outcomes(_ request: HTTPRequest, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        guard let (after, limit) = feedPage(request, responder) else { return }
        var app = request.query["app"]
        if let tenant {
            if let named = app, !tenant.allows(named) { return responder.respond(error(tenant.refusal(named))) }
            if app == nil {
                guard tenant.apps.count == 1 else {
                    return responder.respond(error(.invalidParameters(
                        "this token reads the outcomes of several apps: name one with app=")))
                }
                app = tenant.apps[0]
            }
        }
        readers.enqueue({ [app] in try $0.outcomes(after: after, app: app, limit: limit) }) { result in
            switch result {
            case .success(let outcomes):
                let body = JSON.object([
                    ("outcomes", .array(outcomes.map(\.json))), ("next", .int(outcomes.last?.seq ?? after)),
                ])
                responder.respond(.json(200, body.serialized()))
            case .failure(let failure):
                responder.respond(Self.unavailable(failure))
            }
        }
    }

    /// A tenant reads the events of its apps only.
    private func tokenEvents(_ request: HTTPRequest, _ tenant: APITokens.Grant?, _ responder: any HTTPResponder) {
        guard let (after, limit) = feedPage(request, responder) else { return }
        readers.enqueue({ try $0.tokenEvents(after: after, limit: limit, apps: tenant?.apps) }) { result in
            switch result {
            case .success(let events):
                let body = JSON.object([
                    ("events", .array(events.map(Self.tokenEventJSON))),
                    ("next", .int(events.last?.id ?? after)),
                ])
                responder.respond(.json(200, body.serialized()))
            case .failure(let failure):
                responder.respond(Self.unavailable(failure))
            }
        }
    }

    // MARK: - Health

    private func ready(_ responder: any HTTPResponder) {
        guard !isShuttingDown() else {
            return responder.respond(error(APIError(status: 503, code: "Unavailable", message: "shutting down"),
                                           headers: [("Retry-After", "1")]))
        }
        // A job on the writer runs inside BEGIN IMMEDIATE: its success proves the database takes writes.
        writer.enqueue({ _ in }) { result in
            switch result {
            case .success: responder.respond(.json(200, #"{"status":"ready"}"#))
            case .failure(let failure): responder.respond(Self.unavailable(failure))
            }
        }
    }

    // MARK: - Helpers

    private func unknownApp(_ app: String) -> APIError? {
        guard let knownApps, !knownApps.contains(app), app != NewMessage.everyApp else { return nil }
        return .unknownApp(app, known: Array(knownApps))
    }

    /// The app a request acts for: the one it names or, naming none, `MessageValidator.defaultApp` for the admin
    /// and the token's only app for a tenant (`Grant.app(named:)`).
    private func app(named: String?, for tenant: APITokens.Grant?) -> Result<String, APIError> {
        tenant?.app(named: named) ?? .success(named ?? MessageValidator.defaultApp)
    }

    /// A tenant's message, for the app it names or, naming none, the token's only app.
    private func scoped(_ message: IncomingMessage, for tenant: APITokens.Grant?) -> Result<IncomingMessage, APIError> {
        guard let tenant else { return .success(message) }
        return tenant.app(named: message.namesApp ? message.app : nil).map { app in
            var scoped = message
            scoped.app = app
            return scoped
        }
    }

    /// The app whose FCM project `project` is (`default` when no app has a project id); nil for an unknown one.
    private func app(ofProject project: String) -> String? {
        projects.isEmpty ? MessageValidator.defaultApp : projects[project]
    }

    /// Not the token's app's name: whose it is, is another tenant's business.
    private static let registeredElsewhere = APIError.forbidden(
        "the token is registered to an app this API token does not act for")

    private func checkApp(_ message: IncomingMessage) -> Result<IncomingMessage, APIError> {
        (unknownApp(message.app) ?? refusal(of: message)).map { .failure($0) } ?? .success(message)
    }

    /// A message that its app's provider cannot carry (`AddressingRules.refusal`).
    private func refusal(of message: IncomingMessage) -> APIError? {
        addressing[message.app]?.refusal(of: message, app: message.app)
    }

    /// `Bearer <token>`; with `fcmCompatible`, also `key=<token>` as FCM's clients write it: the admin token (nil),
    /// or a tenant's (its grant). A request with neither guessed nothing: it is refused without counting against
    /// its address.
    private func checkToken(_ request: HTTPRequest, fcmCompatible: Bool) -> GuessThrottle.Verdict<APITokens.Grant?> {
        guard let apiToken else { return .passed(nil) }
        guard let header = request.header("authorization"),
              let scheme = (fcmCompatible ? ["Bearer ", "key="] : ["Bearer "]).first(where: {
                  header.utf8.starts(with: $0.utf8)
              })
        else { return .refused }
        return guesses.check(request.peer, "api token") {
            let presented = Array(header.utf8.dropFirst(scheme.utf8.count))
            if constantTimeEquals(presented, apiToken) { return .some(nil) }
            return tenants.grant(for: presented).map { .some($0) }
        }
    }

    private func error(_ failure: APIError, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        .json(failure.status, failure.jsonBody, headers: headers)
    }

    private static func unavailable(_ failure: Error) -> HTTPResponse {
        Log.warn("storage unavailable", ["error": .string("\(failure)")])
        let body = APIError(status: 503, code: "Unavailable", message: "the database is unavailable; retry later")
        return .json(503, body.jsonBody, headers: [("Retry-After", "1")])
    }

    private static func notFound(_ kind: String, _ id: String) -> HTTPResponse {
        let body = APIError(status: 404, code: "NotFound", message: "no \(kind) \(id)")
        return .json(404, body.jsonBody)
    }

    public static func acceptedJSON(_ accepted: AcceptedMessage) -> JSON {
        .object([("id", .string(accepted.id)), ("deliveries", .int(Int64(accepted.deliveries)))])
    }

    public static func messageJSON(_ record: MessageRecord) -> JSON {
        var counts: [(key: String, value: JSON)] = []
        for state in DeliveryState.allCases {
            counts.append((state.rawValue, .int(Int64(record.deliveries.count(where: { $0.state == state })))))
        }
        let deliveries: [JSON] = record.deliveries.map { delivery in
            .object([
                ("token", .string(delivery.token)),
                ("app", .string(delivery.app)),
                ("state", .string(delivery.state.rawValue)),
                ("reason", delivery.reason.map { .string($0.rawValue) } ?? .null),
                ("attempts", .int(Int64(delivery.attempts))),
                ("next_attempt_at", .int(delivery.nextAttemptAt)),
                ("fcm_message_id", delivery.fcmMessageID.map(JSON.string) ?? .null),
                ("canonical_token", delivery.canonicalToken.map(JSON.string) ?? .null),
                ("last_status", delivery.lastStatus.map(JSON.int) ?? .null),
            ])
        }
        return .object([
            ("id", .string(record.id)),
            ("app", .string(record.app)),
            ("format", .string(record.format.rawValue)),
            ("target_kind", .string(record.targetKind.rawValue)),
            ("token_field", .string(record.tokenField.rawValue)),
            ("collapse_key", record.collapseKey.map(JSON.string) ?? .null),
            ("priority", .string(record.priority.rawValue)),
            ("ttl_seconds", .int(Int64(record.ttlSeconds))),
            ("dry_run", .bool(record.dryRun)),
            ("created_at", .int(record.createdAt)),
            ("expires_at", .int(record.expiresAt)),
            ("send_at", record.sendAt.map(JSON.int) ?? .null),
            ("cancelled_at", record.cancelledAt.map(JSON.int) ?? .null),
            ("payload", (try? JSON.parse(Array(record.payload.utf8))) ?? .string(record.payload)),
            ("counts", .object(counts)),
            ("deliveries", .array(deliveries)),
        ])
    }

    public static func tokenJSON(_ record: TokenRecord) -> JSON {
        .object([
            ("token", .string(record.token)),
            ("app", .string(record.app)),
            ("user", record.user.map(JSON.string) ?? .null),
            ("created_at", .int(record.createdAt)),
            ("updated_at", .int(record.updatedAt)),
        ])
    }

    public static func tokenEventJSON(_ event: TokenEventRecord) -> JSON {
        .object([
            ("id", .int(event.id)),
            ("at", .int(event.at)),
            ("app", .string(event.app)),
            ("token", .string(event.token)),
            ("kind", .string(event.kind.rawValue)),
            ("replacement", event.replacement.map(JSON.string) ?? .null),
            ("reason", event.reason.map { .string($0.rawValue) } ?? .null),
            ("message_id", event.messageID.map(JSON.string) ?? .null),
        ])
    }
}

extension IncomingMessage {
    /// The storage form (also what `herald send` stores): payload as JSON text, users expanded later inside the
    /// ingest transaction.
    public func stored(idempotencyKey: String?) -> NewMessage {
        NewMessage(
            app: app, idempotencyKey: idempotencyKey, payload: payload.serialized(), format: format, target: target,
            tokenField: tokenField, collapseKey: collapseKey, priority: priority, ttlSeconds: ttlSeconds,
            dryRun: dryRun, sendAt: sendAt)
    }
}

/// The body of `PUT /v1/tokens/{token}`: `{"app": "default", "user": "u1"}`, both optional (`app` nil when not
/// named).
enum TokenRegistration {
    static func validate(token: String, body: [UInt8]) -> Result<(app: String?, user: String?), APIError> {
        func invalid(_ message: String) -> Result<(app: String?, user: String?), APIError> {
            .failure(APIError(status: 400, code: "InvalidParameters", message: message))
        }
        guard token.utf8.count <= 4096 else { return invalid("a token is at most 4096 bytes") }
        if body.isEmpty { return .success((nil, nil)) }
        guard let object = (try? JSON.parse(body)), let fields = object.objectValue else {
            return .failure(APIError(status: 400, code: "InvalidJson", message: "the body must be a JSON object"))
        }
        if let unknown = fields.first(where: { $0.key != "app" && $0.key != "user" }) {
            return invalid("unknown field \"\(unknown.key)\"")
        }
        var app: String?
        if let value = object["app"] {
            guard let name = value.stringValue, !name.isEmpty else {
                return invalid("\"app\" must be a non-empty string")
            }
            app = name
        }
        var user: String?
        if let value = object["user"], value != .null {
            guard let name = value.stringValue, !name.isEmpty else {
                return invalid("\"user\" must be a non-empty string")
            }
            user = name
        }
        return .success((app, user))
    }
}

/// The body of `PUT /v1/subscriptions`: `{"app": "web", "user": "u1", "subscription": {...}}`, the subscription
/// exactly as `PushSubscription.toJSON()` gives it; `user` optional.
enum SubscriptionRegistration {
    static func validate(body: [UInt8]) -> Result<(token: String, app: String?, user: String?), APIError> {
        guard let object = (try? JSON.parse(body)), let fields = object.objectValue else {
            return .failure(APIError(status: 400, code: "InvalidJson", message: "the body must be a JSON object: "
                + "{\"app\", \"user\", \"subscription\": PushSubscription.toJSON()}"))
        }
        if let unknown = fields.first(where: { !["app", "user", "subscription"].contains($0.key) }) {
            return .failure(.invalidParameters("unknown field \"\(unknown.key)\""))
        }
        guard let subscription = object["subscription"] else {
            return .failure(.invalidParameters("\"subscription\" is missing: give PushSubscription.toJSON()"))
        }
        let token: String
        do {
            token = try MessageValidator.subscriptionToken(subscription, error: APIError.invalidParameters)
        } catch {
            return .failure(error)
        }
        let names: Result<(app: String?, user: String?), APIError> = TokenRegistration.validate(
            token: token, body: Array(JSON.object(fields.filter { $0.key != "subscription" }).serialized().utf8))
        return names.map { (token, $0.app, $0.user) }
    }
}
