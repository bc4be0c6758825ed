import FCMSimulator
import OAuth
import Support

extension FCMV1Simulator {
    /// The service account the token endpoint trusts: assertions must be signed by its key and issued by its
    /// `client_email`; `messages:send` must name its project (when it has one).
    ///
    /// ```swift
    /// let account = try FCMV1Simulator.Account(serviceAccountFile: "test-service-account.json")
    /// let simulator = FCMSimulator(sides: [FCMV1Simulator(account: account)])
    /// ```
    public struct Account: Sendable, Equatable {
        public var clientEmail: String
        public var projectID: String?
        /// `BEGIN PUBLIC KEY` PEM: only the public half is kept.
        public var publicKeyPEM: String

        public init(clientEmail: String, projectID: String?, publicKeyPEM: String) {
            self.clientEmail = clientEmail
            self.projectID = projectID
            self.publicKeyPEM = publicKeyPEM
        }

        public init(_ account: ServiceAccount) {
            self.init(clientEmail: account.clientEmail, projectID: account.projectID,
                      publicKeyPEM: account.privateKey.publicKey.pem())
        }

        /// Reads a service-account key file, the same one Herald is given.
        public init(serviceAccountFile path: String) throws(ServiceAccount.Invalid) {
            self.init(try ServiceAccount(contentsOf: path))
        }
    }

    /// Faults of the token endpoint, queued through `/control`.
    public enum TokenFault: String, Sendable, Equatable {
        /// `503`, which Herald retries.
        case unavailable
        /// `400 invalid_grant`, which pauses the app.
        case refuse
    }

    /// `POST /token` requests and their answers: `oauth` in `GET /stats`.
    public struct OAuthCounts: Sendable, Equatable {
        public var tokenRequests = 0
        public var tokensIssued = 0
        /// Answered 400 (a refused assertion, or a queued refusal).
        public var refused = 0
        /// Answered 503 (a queued failure).
        public var failed = 0

        var json: JSON {
            .object([
                ("token_requests", .int(tokenRequests)), ("tokens_issued", .int(tokensIssued)),
                ("refused", .int(refused)), ("failed", .int(failed)),
            ])
        }
    }
}

/// What FCM v1's token endpoint remembers: the access tokens it issued (kept across a reset), faults queued for it,
/// and its counts.
struct OAuthState: Sendable {
    /// What the token endpoint's checks found, made outside the lock (signature checks take a while).
    enum AssertionCheck: Sendable, Equatable {
        case valid
        /// RFC 6749 §5.2: `error` and `error_description`.
        case invalid(error: String, description: String)
    }

    enum TokenReply: Sendable, Equatable {
        case token(String, expiresIn: Int)
        case refused(error: String, description: String)
        case unavailable
    }

    /// Access token → expiry (Unix ms).
    var issued: [String: Int64] = [:]
    var queued: [FCMV1Simulator.TokenFault: Int] = [:]
    var counts = FCMV1Simulator.OAuthCounts()

    /// Forgets the queued faults and the counts, keeping the tokens issued.
    mutating func reset() {
        queued = [:]
        counts = FCMV1Simulator.OAuthCounts()
    }

    /// Records one `POST /token` and decides its answer: a queued fault, the checks' refusal, or a new token.
    mutating func receive(_ check: AssertionCheck, token: String, lifetime: Int, nowMillis: Int64) -> TokenReply {
        counts.tokenRequests += 1
        switch takeQueued() {
        case .refuse?:
            counts.refused += 1
            return .refused(error: "invalid_grant", description: "Refused by the simulator (token_refuse_next).")
        case .unavailable?:
            counts.failed += 1
            return .unavailable
        case nil:
            break
        }
        if case .invalid(let error, let description) = check {
            counts.refused += 1
            return .refused(error: error, description: description)
        }
        if issued.count >= 10_000 { issued = issued.filter { $0.value > nowMillis } }
        issued[token] = nowMillis + Int64(lifetime) * 1000
        counts.tokensIssued += 1
        return .token(token, expiresIn: lifetime)
    }

    /// A queued fault for this request, refusals first.
    private mutating func takeQueued() -> FCMV1Simulator.TokenFault? {
        for fault in [FCMV1Simulator.TokenFault.refuse, .unavailable] {
            if let count = queued[fault], count > 0 {
                queued[fault] = count - 1
                return fault
            }
        }
        return nil
    }

    func isValid(_ token: String, now: Int64) -> Bool {
        issued[token].map { now < $0 } ?? false
    }
}
