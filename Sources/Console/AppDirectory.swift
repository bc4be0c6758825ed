import Ingest
import Queue
import Support

/// The apps `serve` runs, as `/v1/admin/apps` and the console's Apps page see and change them (SPEC §22): those of the
/// config file (read-only), and those stored in the database, whose entries it checks and seals and which it applies.
public protocol AppDirectory: Sendable {
    /// The config file's apps as shown (`"source": "config"`).
    var configApps: [JSON] { get }
    /// App → provider of the stored apps running.
    var providers: [String: String] { get }
    /// App → certificate of the stored apps running that have one (APNs' certificate authentication).
    var certificates: [String: CredentialFacts.Certificate] { get }
    /// `body`, an `apps` entry, checked as app `name` (its files read, its keys parsed) with its secrets sealed:
    /// 400 with the reason, 409 for a config-file app. It reads files and signs: call it on a thread you own.
    func prepare(name: String, body: JSON, now: Int64) throws(APIError) -> AppDefinitionRecord
    /// A stored app as shown (`"source": "database"`): key ids and fingerprints, never a secret.
    func view(_ record: AppDefinitionRecord) -> JSON
    /// Applies the apps stored in the database to this instance now, then calls `done`.
    func refresh(then done: @escaping @Sendable () -> Void)
}
