import Console
import Ingest
import Storage
import TestSupport

/// `serve`'s handler on a SQLite file of its own: ingest and the console's API behind the console's router and the
/// front door, as `serve` hands them to its listener.
struct ServedConsole {
    let directory: TemporaryDirectory
    let writer: DatabaseWriter
    let readers: DatabaseReaders

    init(prefix: String) throws {
        directory = TemporaryDirectory(prefix: prefix)
        let path = directory.path("herald.db")
        writer = try DatabaseWriter(path: path)
        readers = try DatabaseReaders(path: path)
    }

    /// With `--api-token token` (nil: none, and loopback only) and the read-only token; the API tokens and who
    /// guessed wrong lately shared by ingest and the console, as `serve` shares them.
    func frontDoor(
        token: String?, readOnlyToken: String? = nil, tenants: APITokens = APITokens(),
        guesses: GuessThrottle = GuessThrottle(), providers: [String: String] = ["default": "fcm-v1"]
    ) -> FrontDoor {
        let api = IngestAPI(writer: writer, readers: readers, apiToken: token, tenants: tenants, guesses: guesses)
        let admin = AdminAPI(
            writer: writer, readers: readers,
            access: ConsoleAccess(apiToken: token, readOnlyToken: readOnlyToken, guesses: guesses, tenants: tenants),
            apiTokens: tenants, providers: providers, metrics: .herald(), history: RateHistory(since: 0))
        return FrontDoor(ConsoleRouter(api: api, admin: admin), loopbackOnly: token == nil)
    }
}
