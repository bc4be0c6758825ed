import HTTP
import Support

/// `serve`'s handler: `/console…` and `/v1/admin/…` here, everything else to the ingest API it wraps. The console
/// shares the listener and the API token; its cookie and its read-only token open only these two prefixes, never
/// ingest (a cookie that could post messages would make every other site's form a way to send pushes).
public final class ConsoleRouter: HTTPHandler {
    private let api: any HTTPHandler
    private let admin: AdminAPI
    private let page: ConsolePage

    public init(api: any HTTPHandler, admin: AdminAPI) {
        self.api = api
        self.admin = admin
        page = ConsolePage(access: admin.access)
    }

    private enum Route {
        case page, admin, api
    }

    /// Asked three times per request (admit, body limit, handle): a path without percent-encoding is routed by its
    /// first bytes, with no segments made.
    private func route(_ path: String) -> Route {
        let bytes = path.utf8
        if !bytes.contains(UInt8(ascii: "%")) {
            func under(_ prefix: String) -> Bool {
                bytes.starts(with: prefix.utf8)
                    && (bytes.count == prefix.utf8.count || bytes.dropFirst(prefix.utf8.count).first == UInt8(ascii: "/"))
            }
            return under("/console") ? .page : under("/v1/admin") ? .admin : .api
        }
        guard let segments = HTTPRequest.pathSegments(of: path), let first = segments.first else { return .api }
        if first == "console" { return .page }
        if first == "v1" && segments.count >= 2 && segments[1] == "admin" { return .admin }
        return .api
    }

    /// Tokens and logins are checked on the head, so a refused request's body is never read.
    public func admit(_ head: HTTPRequest) -> HTTPResponse? {
        switch route(head.path) {
        case .page: nil
        case .admin: admin.access.refusal(head, now: Clock.nowMillis())
        case .api: api.admit(head)
        }
    }

    public func bodyLimit(method: String, path: String) -> Int {
        switch route(path) {
        case .page: ConsolePage.loginBodyLimit
        case .admin: AdminAPI.bodyLimit
        case .api: api.bodyLimit(method: method, path: path)
        }
    }

    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        switch route(request.path) {
        case .page:
            page.handle(request, responder: responder)
        case .admin:
            // The server asked `admit` already; this covers a request handed here any other way.
            if let refusal = admin.access.refusal(request, now: Clock.nowMillis()) {
                return responder.respond(refusal)
            }
            admin.handle(request, responder: responder)
        case .api:
            api.handle(request, responder: responder)
        }
    }
}
