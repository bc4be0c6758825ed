import Support

/// What the console and `herald status` show of the credentials in force (SPEC §22): key ids, fingerprints and
/// expiry dates, never a secret.
public struct CredentialFacts: Sendable {
    /// An app's TLS client certificate (APNs' certificate authentication).
    public struct Certificate: Sendable {
        public var expiresAt: Int64
        public var sha256: String
        public var subject: String?
        /// Whose certificate it is, as people call the provider: "APNs".
        public var provider: String

        public init(expiresAt: Int64, sha256: String, subject: String?, provider: String) {
            (self.expiresAt, self.sha256, self.subject, self.provider) = (expiresAt, sha256, subject, provider)
        }

        /// `{"expires_at", "sha256", "subject"}`, an app's `certificate` in `status --json` and the overview.
        public var json: JSON {
            ["expires_at": .int(expiresAt), "sha256": .string(sha256), "subject": AdminJSON.optional(subject)]
        }
    }

    /// The id (a fingerprint) of `--secrets-key-file`'s key.
    public var secretsKeyID: String?
    /// App name → its certificate.
    public var certificates: [String: Certificate]

    public init(secretsKeyID: String? = nil, certificates: [String: Certificate] = [:]) {
        self.secretsKeyID = secretsKeyID
        self.certificates = certificates
    }
}
