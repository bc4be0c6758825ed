import Support

/// The JWT bearer assertion of Google's service-account flow (RFC 7523): `{"alg":"RS256","typ":"JWT"}`, the claims
/// `iss`, `scope`, `aud`, `iat`, `exp`, signed with the service account's key.
///
/// ```swift
/// let claims = JWT.Claims(issuer: account.clientEmail, scope: JWT.firebaseMessagingScope,
///                         audience: account.tokenURI, issuedAt: now, lifetime: 3600)
/// let assertion = try JWT.sign(claims, with: key)    // "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJp…"
/// let verified = try JWT.verify(assertion, with: key.publicKey)
/// ```
public enum JWT {
    public static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Google refuses assertions that live longer than an hour.
    public static let maximumLifetime: Int64 = 3600

    public struct Claims: Sendable, Equatable {
        public var issuer: String
        public var scope: String
        public var audience: String
        /// Unix seconds.
        public var issuedAt: Int64
        public var expiresAt: Int64

        public init(issuer: String, scope: String, audience: String, issuedAt: Int64, expiresAt: Int64) {
            self.issuer = issuer
            self.scope = scope
            self.audience = audience
            self.issuedAt = issuedAt
            self.expiresAt = expiresAt
        }

        /// `exp` = `iat` + `lifetime`, the lifetime cut to an hour.
        public init(issuer: String, scope: String, audience: String, issuedAt: Int64, lifetime: Int64) {
            self.init(issuer: issuer, scope: scope, audience: audience, issuedAt: issuedAt,
                      expiresAt: issuedAt + min(max(1, lifetime), maximumLifetime))
        }

        var json: JSON {
            .object([
                ("iss", .string(issuer)), ("scope", .string(scope)), ("aud", .string(audience)),
                ("iat", .int(issuedAt)), ("exp", .int(expiresAt)),
            ])
        }
    }

    static let header: JSON = .object([("alg", .string("RS256")), ("typ", .string("JWT"))])

    /// `base64url(header).base64url(claims).base64url(signature)`.
    public static func sign(_ claims: Claims, with key: RSAPrivateKey) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(Array(header.serialized().utf8)) + "."
            + Base64URL.encode(Array(claims.json.serialized().utf8))
        let signature = try key.signSHA256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// An ES256 token (`{"alg":"ES256",…}`): APNs' provider token (`kid` in the header, `iss` and `iat` claimed) and
    /// Web Push's VAPID (`aud`, `exp`, `sub`). The header gets `alg` first; `typ` is left to the caller.
    public static func signES256(
        header: [(String, JSON)], claims: JSON, with key: P256PrivateKey
    ) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(Array(JSON.object([("alg", .string("ES256"))] + header).serialized().utf8))
            + "." + Base64URL.encode(Array(claims.serialized().utf8))
        let signature = try key.signES256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Decodes `token` and checks that it is ES256 and signed by `key`; the claims are the caller's to judge.
    public static func verifyES256(_ token: String, with key: P256PublicKey) throws(Invalid) -> Decoded {
        let decoded = try decode(token)
        guard decoded.header["alg"]?.stringValue == "ES256" else { throw Invalid("Invalid JWT: alg must be ES256") }
        guard key.verifyES256(decoded.signature, of: decoded.signingInput) else {
            throw Invalid("Invalid JWT Signature.")
        }
        return decoded
    }

    /// Why an assertion was refused; `description` reads like Google's `error_description`.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// A decoded token: its header and claims as JSON, and the bytes its signature covers.
    public struct Decoded: Sendable {
        public var header: JSON
        public var claims: JSON
        public var signingInput: [UInt8]
        public var signature: [UInt8]
    }

    /// Splits and decodes a compact JWT without checking the signature.
    public static func decode(_ token: String) throws(Invalid) -> Decoded {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Invalid("Invalid JWT: not three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2])
        else { throw Invalid("Invalid JWT: a part is not base64url") }
        guard let header = try? JSON.parse(headerBytes), header.objectValue != nil,
              let claims = try? JSON.parse(claimBytes), claims.objectValue != nil
        else { throw Invalid("Invalid JWT: header and claims must be JSON objects") }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        return Decoded(header: header, claims: claims, signingInput: signingInput, signature: signature)
    }

    /// Decodes `token` and checks that it is RS256 and signed by `key`; the claims are the caller's to judge.
    public static func verify(_ token: String, with key: RSAPublicKey) throws(Invalid) -> Decoded {
        let decoded = try decode(token)
        guard decoded.header["alg"]?.stringValue == "RS256" else {
            throw Invalid("Invalid JWT: alg must be RS256")
        }
        guard key.verifySHA256(decoded.signature, of: decoded.signingInput) else {
            throw Invalid("Invalid JWT Signature.")
        }
        return decoded
    }
}
