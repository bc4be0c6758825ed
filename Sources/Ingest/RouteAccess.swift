import Queue

/// What each route asks of a per-tenant API token (SPEC §22) — the one table to extend when a route is added.
///
/// The admin token (`serve --api-token`) calls every route. A per-tenant token calls only the routes below whose
/// role is its own, and only for its apps; any other route (`/metrics`, `/console`, `/v1/admin/…`, an unknown path
/// or method) is the admin token's, and a per-tenant token gets `403 Forbidden` there. `/healthz` and `/readyz`
/// need no token at all.
///
/// `app` says where the route names the app it acts for, and so when the check can run: a route that names it in
/// its head is refused before its body is read; the others once their body is validated, or their record read, and
/// always before anything is stored or changed.
struct RouteAccess: Sendable {
    /// Where a route names the app it acts for.
    enum App: Sendable, Equatable {
        /// A request header (`X-Herald-App` of `/fcm/send`); absent, the token's only app.
        case header(String)
        /// The `{project}` of `/v1/projects/{project}/messages:send`: the app whose `project_id` it is.
        case project
        /// The body's `app`; absent, the token's only app.
        case body
        /// The stored message or token the route reads or changes.
        case record
        /// A feed: what the route lists is filtered to the token's apps.
        case feed
    }

    var method: String
    /// The path's segments; `*` stands for any one non-empty segment.
    var path: [String]
    var role: APITokenRole
    var app: App

    init(_ method: String, _ path: String, _ role: APITokenRole, _ app: App) {
        (self.method, self.path, self.role, self.app) = (method, path.split(separator: "/").map(String.init), role, app)
    }

    static let routes: [RouteAccess] = [
        RouteAccess("POST", "/v1/messages", .send, .body),
        RouteAccess("POST", "/v1/messages/batch", .send, .body),
        RouteAccess("DELETE", "/v1/messages/*", .send, .record),
        RouteAccess("POST", "/fcm/send", .send, .header("x-herald-app")),
        RouteAccess("POST", "/v1/projects/*/messages:send", .send, .project),
        RouteAccess("PUT", "/v1/tokens/*", .register, .body),
        RouteAccess("GET", "/v1/tokens/*", .register, .record),
        RouteAccess("DELETE", "/v1/tokens/*", .register, .record),
        RouteAccess("PUT", "/v1/subscriptions", .register, .body),
        RouteAccess("GET", "/v1/messages/*", .read, .record),
        RouteAccess("GET", "/v1/token-events", .read, .feed),
        RouteAccess("GET", "/v1/outcomes", .read, .feed),
    ]

    /// The entry for a request (its decoded path segments); nil for a route only the admin token may call.
    static func of(method: String, segments: [String]) -> RouteAccess? {
        routes.first { route in
            route.method == method && route.path.count == segments.count
                && zip(route.path, segments).allSatisfy { pattern, segment in
                    pattern == "*" ? !segment.isEmpty : pattern == segment
                }
        }
    }
}
