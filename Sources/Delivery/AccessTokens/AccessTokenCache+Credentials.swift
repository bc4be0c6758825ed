/// The access token as the engine drives it, when the app's scheduler asks.
extension AccessTokenCache: Credentials {
    public func current(now: Int64) -> String? {
        usableToken(now: now)?.value
    }

    public func renewalDue(now: Int64) -> Bool {
        usableToken(now: now).map { now >= $0.renewFrom } ?? false
    }

    public func renew(now: Int64) {
        renewIfDue(now: now)
    }

    public func obtain(now: Int64, completion: @escaping @Sendable (ProviderReadiness) -> Void) {
        fetch(now: now, completion: completion)
    }

    public func refused(_ request: PreparedRequest) -> CredentialRefusal {
        rejected(Self.bearerToken(of: request))
    }

    public func accepted(_ request: PreparedRequest) -> Bool {
        accepted { Self.bearerToken(of: request) }
    }

    /// The token a request was sent with, read back from its `Authorization` header: only after a refusal, or
    /// while a renewed token waits for proof, so no request carries it twice.
    private static func bearerToken(of request: PreparedRequest) -> String {
        let value = request.outbound.headers.first(where: { $0.name == "Authorization" })?.value ?? ""
        return value.hasPrefix("Bearer ") ? String(value.dropFirst("Bearer ".count)) : value
    }
}
