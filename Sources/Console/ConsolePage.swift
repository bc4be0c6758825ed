import HTTP
import Ingest
import Support

/// `/console`: the page, its stylesheet and script (compiled into the binary from `console/`), and the login
/// that turns a token into a session cookie. Every answer carries a Content-Security-Policy that allows only this
/// server's own script and style (no inline script, no other origin), so even text that slipped into the page as
/// markup could not run.
struct ConsolePage: Sendable {
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; "
        + "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// The headers of every console answer. `Referrer-Policy: same-origin`, not `no-referrer`: under `no-referrer`
    /// Chromium sends `Origin: null` with the page's own POSTs (the login form, fetch), which the same-origin check
    /// could not tell from a sandboxed frame's; `same-origin` still sends no referrer to any other site.
    static let headers: [(name: String, value: String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
        ("X-Frame-Options", "DENY"),
        ("Cache-Control", "no-cache"),
    ]

    static let loginBodyLimit = 4096

    let access: ConsoleAccess

    func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        let path = Array(request.pathSegments.dropFirst())
        switch (request.method, path) {
        case ("GET", []), ("GET", [""]), ("HEAD", []), ("HEAD", [""]):
            responder.respond(asset("index.html"))
        case ("GET", let names) where names.count == 1, ("HEAD", let names) where names.count == 1:
            responder.respond(asset(names[0]))
        case ("POST", ["login"]):
            responder.respond(login(request))
        case ("POST", ["logout"]):
            if let id = ConsoleAccess.sessionID(in: request) { access.sessions.remove(id) }
            responder.respond(redirect(cookie: "\(ConsoleAccess.cookieName)=; \(Self.cookieAttributes); Max-Age=0"))
        default:
            responder.respond(notFound())
        }
    }

    /// `HttpOnly`: no script reads it; `SameSite=Strict`: no other site's page sends it.
    static let cookieAttributes = "HttpOnly; SameSite=Strict; Path=/"

    /// `POST /console/login` with the form field `token`: a session for the role that token gives, then back to
    /// the page; a wrong token goes back with `?login=failed` and no cookie, and counts against the client's
    /// address, whose logins are then answered 429 for a while (`GuessThrottle`).
    private func login(_ request: HTTPRequest) -> HTTPResponse {
        let token = (try? FormBody.parse(request.body))?.fields.first(where: { $0.name == "token" })?.value ?? ""
        guard access.needsLogin else { return redirect(cookie: nil) }
        switch access.check(token: token, from: request.peer) {
        case .refused:
            return redirect(cookie: nil, to: "/console?login=failed")
        case .throttled(let seconds):
            return .text(
                429, "Too many wrong tokens from your address: try again in \(seconds) s.\n",
                headers: Self.headers + [("Retry-After", String(seconds))])
        case .passed(let role):
            let id = access.sessions.create(role, now: Clock.nowMillis())
            Log.info("console login", [
                "role": .string(role.rawValue), "client": .string(request.peer?.description ?? "unknown"),
            ])
            let maxAge = ConsoleSessions.lifetimeMillis / 1000
            return redirect(cookie: "\(ConsoleAccess.cookieName)=\(id); \(Self.cookieAttributes); Max-Age=\(maxAge)")
        }
    }

    private func redirect(cookie: String?, to location: String = "/console") -> HTTPResponse {
        var headers = Self.headers + [("Location", location)]
        if let cookie { headers.append(("Set-Cookie", cookie)) }
        return HTTPResponse(status: 303, headers: headers)
    }

    private func asset(_ name: String) -> HTTPResponse {
        guard let text = embeddedConsoleAssets[name] else { return notFound() }
        let type = name.hasSuffix(".html") ? "text/html; charset=utf-8"
            : name.hasSuffix(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8"
        return HTTPResponse(status: 200, headers: [("Content-Type", type)] + Self.headers, body: Array(text.utf8))
    }

    private func notFound() -> HTTPResponse {
        HTTPResponse(status: 404, headers: [("Content-Type", "text/plain; charset=utf-8")] + Self.headers,
                     body: Array("not found\n".utf8))
    }
}
