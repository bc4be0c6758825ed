import Dispatch
import OAuth
import Send
import Support
import Synchronization

/// One app's OAuth2 access token: fetched at its token endpoint with the app's grant — FCM HTTP v1's RS256 JWT
/// assertion (RFC 7523) at the service account's `token_uri`, HMS Push Kit's client credentials (RFC 6749 §4.4) —
/// kept until shortly before it expires, renewed in the background before then, and renewed at once when the push
/// service refuses it.
///
/// Nothing here blocks its caller: the grant is made (signed) on the cache's own dispatch queue and the token
/// request goes through an `HTTPClientPool`, whose answer comes back to that queue. Callers on the delivery engine's
/// queue only take the lock for a few loads and stores.
///
/// ```swift
/// let cache = AccessTokenCache(app: "default", account: account, tokenURI: account.tokenURI!, pool: pool)
/// cache.fetch(now: Clock.nowMillis()) { readiness in ... }    // .ready, .retry(at:), .pause(reason:)
/// cache.usableToken(now: Clock.nowMillis())?.value            // "ya29.c.b0Aaek..."
/// ```
public final class AccessTokenCache: Sendable {
    /// The form body of one token request, made on the cache's queue before each fetch (v1 signs a new assertion
    /// each time); an error is a grant that can never work, and pauses the app with its text.
    public typealias Grant = @Sendable () throws -> String

    struct Token: Sendable, Equatable {
        var value: String
        var obtainedAt: Int64
        var expiresAt: Int64

        /// Sending stops a little before expiry, so a request never arrives at FCM with a token that just ran out.
        var usableUntil: Int64 { expiresAt - min(30_000, lifetime / 10) }
        /// A background renewal starts a while before that (5 minutes of Google's hour).
        var renewFrom: Int64 { expiresAt - min(300_000, lifetime / 4) }
        private var lifetime: Int64 { max(0, expiresAt - obtainedAt) }
    }

    /// What FCM's refusal of a token (401 `UNAUTHENTICATED`) means.
    typealias Rejection = CredentialRefusal

    /// What the token endpoint answered.
    enum Answer: Sendable, Equatable {
        case token(String, expiresInSeconds: Int64)
        /// The endpoint refused the assertion (a wrong key, a deleted account): pausing is the only answer.
        case refused(String)
        /// Nothing usable for now (5xx, 429, a timeout, a malformed answer): try again later.
        case failed(String)
    }

    private struct State {
        var token: Token?
        /// The current token replaced one FCM refused; a refusal of this one too pauses the app.
        var renewedAfterRejection = false
        /// The fetch under way (or the next one) replaces a token FCM refused.
        var renewingAfterRejection = false
        var fetching = false
        var waiters: [@Sendable (ProviderReadiness) -> Void] = []
        /// Consecutive failed fetches, for the backoff, and the time before which no fetch starts.
        var failures = 0
        var notBefore: Int64 = 0
    }

    /// Google's tokens last an hour; an assertion may not ask for longer.
    static let assertionLifetimeSeconds: Int64 = 3600
    static let maximumBackoffMillis: Int64 = 60_000

    let app: String
    /// Who the tokens are for, in log lines: "fcm v1", "hms".
    private let provider: String
    private let grant: Grant
    let tokenURI: String
    private let pool: HTTPClientPool
    private let queue: DispatchQueue
    private let clock: @Sendable () -> Int64
    private let state = Mutex(State())

    /// FCM HTTP v1's: a new assertion signed with the service account's key for every fetch.
    public convenience init(app: String, account: ServiceAccount, tokenURI: String, pool: HTTPClientPool,
                            clock: @escaping @Sendable () -> Int64 = { Clock.nowMillis() }) {
        self.init(app: app, provider: "fcm v1", tokenURI: tokenURI, pool: pool, clock: clock) {
            let claims = JWT.Claims(
                issuer: account.clientEmail, scope: JWT.firebaseMessagingScope, audience: tokenURI,
                issuedAt: clock() / 1000, lifetime: AccessTokenCache.assertionLifetimeSeconds)
            let assertion: String
            do {
                assertion = try JWT.sign(claims, with: account.privateKey)
            } catch {
                throw GrantError(description: "cannot sign the assertion: \(error)")
            }
            return "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        }
    }

    public init(app: String, provider: String, tokenURI: String, pool: HTTPClientPool,
                clock: @escaping @Sendable () -> Int64 = { Clock.nowMillis() }, grant: @escaping Grant) {
        self.app = app
        self.provider = provider
        self.grant = grant
        self.tokenURI = tokenURI
        self.pool = pool
        self.clock = clock
        queue = DispatchQueue(label: "herald-oauth-\(app)")
    }

    // MARK: - Reading

    /// The token to send with, if one is valid for a while yet.
    func usableToken(now: Int64) -> Token? {
        state.withLock { state in state.token.flatMap { now < $0.usableUntil ? $0 : nil } }
    }

    /// Starts a background renewal when the token is in its last minutes and none is under way; sending goes on with
    /// the current token meanwhile.
    func renewIfDue(now: Int64) {
        let start = state.withLock { state -> Bool in
            guard let token = state.token, now >= token.renewFrom, !state.fetching, now >= state.notBefore else {
                return false
            }
            state.fetching = true
            return true
        }
        if start { startFetch() }
    }

    /// Calls `completion` with `.ready` once a usable token is held, fetching one if needed; `.retry(at:)` while
    /// the endpoint is failing, `.pause(reason:)` when it refuses the assertion.
    func fetch(now: Int64, completion: @escaping @Sendable (ProviderReadiness) -> Void) {
        enum Step { case ready, wait(Int64), join, start }
        let step = state.withLock { state -> Step in
            if let token = state.token, now < token.usableUntil { return .ready }
            if state.fetching {
                state.waiters.append(completion)
                return .join
            }
            if now < state.notBefore { return .wait(state.notBefore) }
            state.waiters.append(completion)
            state.fetching = true
            return .start
        }
        switch step {
        case .ready: completion(.ready)
        case .wait(let at): completion(.retry(at: at))
        case .join: break
        case .start: startFetch()
        }
    }

    // MARK: - FCM's verdict on a token

    /// FCM answered 401 `UNAUTHENTICATED` to a request made with `value`.
    func rejected(_ value: String) -> Rejection {
        state.withLock { state in
            guard let token = state.token, token.value == value else { return .stale }
            state.token = nil
            if state.renewedAfterRejection {
                // Start over after `herald resume`: the next token gets its own renewal.
                state.renewedAfterRejection = false
                state.renewingAfterRejection = false
                return .pause
            }
            state.renewingAfterRejection = true
            return .renew
        }
    }

    /// FCM answered a request made with `value` with something other than `UNAUTHENTICATED`: the token works.
    /// `value` is only asked for (taken out of the request's headers) after a rejection, which is when it matters.
    /// Returns whether a token renewed after a rejection still waits for such an answer.
    @discardableResult
    func accepted(_ value: () -> String) -> Bool {
        state.withLock { state in
            if state.renewedAfterRejection, state.token?.value == value() { state.renewedAfterRejection = false }
            return state.renewedAfterRejection || state.renewingAfterRejection
        }
    }

    // MARK: - Fetching (on `queue`)

    private func startFetch() {
        queue.async { [self] in
            let form: String
            do {
                form = try grant()
            } catch {
                finish(.refused("\(error)"))
                return
            }
            let request = OutboundRequest(
                url: tokenURI, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Array(form.utf8), timeoutMillis: 30_000)
            pool.submit(request) { result, _ in
                self.queue.async { self.finish(Self.read(result)) }
            }
        }
    }

    private func finish(_ answer: Answer) {
        let now = clock()
        var answer = answer
        if case .token(_, let seconds) = answer, seconds * 1000 <= 1000 {
            answer = .failed("the token endpoint gave a token that expires in \(seconds) s")
        }
        typealias Waiter = @Sendable (ProviderReadiness) -> Void
        let (readiness, waiters) = state.withLock { state -> (ProviderReadiness, [Waiter]) in
            state.fetching = false
            let readiness: ProviderReadiness
            switch answer {
            case .token(let value, let seconds):
                state.token = Token(value: value, obtainedAt: now, expiresAt: now + seconds * 1000)
                state.renewedAfterRejection = state.renewingAfterRejection
                state.renewingAfterRejection = false
                state.failures = 0
                state.notBefore = 0
                readiness = .ready
            case .refused(let reason):
                state.failures += 1
                state.notBefore = now + backoff(state.failures)
                readiness = .pause(reason: reason)
            case .failed:
                state.failures += 1
                state.notBefore = now + backoff(state.failures)
                readiness = .retry(at: state.notBefore)
            }
            defer { state.waiters.removeAll() }
            return (readiness, state.waiters)
        }
        switch answer {
        case .token(_, let seconds):
            Log.info("\(provider) access token obtained", ["app": .string(app), "expires_in_s": .int(seconds)])
        case .refused(let reason):
            Log.warn("the token endpoint refused the \(provider) app's credentials", [
                "app": .string(app), "reason": .string(reason), "waiting": .int(Int64(waiters.count)),
            ])
        case .failed(let reason):
            if case .retry(let at) = readiness {
                Log.warn("fetching an \(provider) access token failed", [
                    "app": .string(app), "reason": .string(reason), "retry_in_ms": .int(at - now),
                ])
            }
        }
        for waiter in waiters { waiter(readiness) }
    }

    private func backoff(_ failures: Int) -> Int64 {
        min(Self.maximumBackoffMillis, 1000 << Int64(min(failures - 1, 16)))
    }

    // MARK: - The token endpoint's answer

    /// RFC 6749 §5: `200 {"access_token", "expires_in", "token_type": "Bearer"}`, or `400/401 {"error",
    /// "error_description"}`. Huawei's endpoint writes `expires_in` as a number or a string of one, and its `error`
    /// as a number with a `sub_error` (`{"error": 1101, "sub_error": 12304, …}`). Pure.
    static func read(_ result: TransportResult) -> Answer {
        guard case .response(let status, _, let body, _) = result else {
            if case .failure(let failure) = result { return .failed("token endpoint: \(failure)") }
            return .failed("token endpoint: no answer")
        }
        let reply = try? JSON.parse(body)
        switch status {
        case 200:
            guard case .string(let token)? = reply?["access_token"], !token.isEmpty,
                  token.utf8.allSatisfy({ (0x21...0x7e).contains($0) })
            else { return .failed("the token endpoint answered 200 without an access_token") }
            if let type = reply?["token_type"]?.stringValue, type.lowercased() != "bearer" {
                return .failed("the token endpoint gave a \"\(printable(type))\" token, not a Bearer token")
            }
            let expiresIn = reply?["expires_in"]
            let seconds = expiresIn?.int64Value ?? expiresIn?.stringValue.flatMap { Int64($0) }
                ?? assertionLifetimeSeconds
            return .token(token, expiresInSeconds: min(max(0, seconds), 86_400))
        case 429, 500...599:
            return .failed("the token endpoint answered HTTP \(status)")
        default:
            guard let error = reply?["error"].flatMap(text) else {
                return .refused("the token endpoint answered HTTP \(status)")
            }
            let subError = reply?["sub_error"].flatMap(text).map { " (sub_error \(printable($0)))" } ?? ""
            let description = reply?["error_description"]?.stringValue.map { ": " + printable($0) } ?? ""
            return .refused("OAuth \(printable(error))\(subError)\(description)")
        }
    }

    /// A string, or a number's lexeme.
    private static func text(_ value: JSON) -> String? {
        if case .number(let lexeme) = value { return lexeme }
        return value.stringValue
    }

    /// Remote text for a pause reason or a log line: printable ASCII, at most 200 characters.
    private static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(200).map {
            (0x20...0x7e).contains($0.value) ? $0 : "?"
        }))
    }
}

/// A grant that cannot be made (a key that cannot sign): its text is the app's pause reason.
struct GrantError: Error, CustomStringConvertible {
    var description: String
}
