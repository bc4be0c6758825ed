import OAuth

extension FCMSimulator {
    /// The service account the simulator's FCM v1 token endpoint trusts: assertions must be signed by its key and
    /// issued by its `client_email`; `messages:send` must name its project (when it has one).
    ///
    /// ```swift
    /// let account = try FCMSimulator.V1Account(serviceAccountFile: "test-service-account.json")
    /// let simulator = FCMSimulator(configuration: .init(v1Account: account))
    /// ```
    public struct V1Account: Sendable, Equatable {
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
}

/// What FCM v1's token endpoint remembers: the access tokens it issued, and faults queued for it.
struct OAuthState: Sendable {
    /// Access token → expiry (Unix ms).
    var issued: [String: Int64] = [:]
    var queued: [FCMSimulator.TokenFault: Int] = [:]

    mutating func apply(_ change: ControlChange) {
        switch change {
        case .tokenNext(let fault, let count): queued[fault] = max(0, count)
        case .revokeTokens: issued.removeAll()
        default: break
        }
    }

    /// A queued fault for this request, refusals first.
    mutating func takeQueued() -> FCMSimulator.TokenFault? {
        for fault in [FCMSimulator.TokenFault.refuse, .unavailable] {
            if let count = queued[fault], count > 0 {
                queued[fault] = count - 1
                return fault
            }
        }
        return nil
    }

    mutating func issue(_ token: String, expiresAt: Int64, now: Int64) {
        if issued.count >= 10_000 { issued = issued.filter { $0.value > now } }
        issued[token] = expiresAt
    }

    func isValid(_ token: String, now: Int64) -> Bool {
        issued[token].map { now < $0 } ?? false
    }
}
