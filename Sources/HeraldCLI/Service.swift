import Foundation
import HTTP
import Ingest
import Storage
import Support
import Synchronization

/// The running parts of `herald serve` and the order they start and stop in.
final class Service: Sendable {
    private let configuration: ServeConfiguration
    private let writer: DatabaseWriter
    private let readers: DatabaseReaders
    private let server: HTTPServer
    private let stopping = StopFlag()

    init(_ configuration: ServeConfiguration) throws {
        self.configuration = configuration
        writer = try DatabaseWriter(path: configuration.databasePath, durability: configuration.durability)
        readers = try DatabaseReaders(path: configuration.databasePath)
        let stopping = self.stopping
        let api = IngestAPI(
            writer: writer, readers: readers, apiToken: configuration.apiToken,
            isShuttingDown: { stopping.isSet })
        var serverConfiguration = HTTPServerConfiguration(address: configuration.listen)
        serverConfiguration.maxConnections = configuration.maxConnections
        server = HTTPServer(configuration: serverConfiguration, handler: api)
    }

    func start() throws {
        let address = try server.start()
        Log.info("listening", [
            "address": .string("\(address)"), "db": .string(configuration.databasePath),
            "durability": .string(configuration.durability.rawValue),
            "apps": .string(configuration.apps.map(\.name).joined(separator: ",")),
        ])
    }

    /// Stop accepting, let open requests finish, then close the database (checkpointing its WAL).
    func stop() {
        stopping.set()
        server.shutdown(gracePeriod: 10)
        readers.close()
        writer.close()
    }
}

/// Set once when the service begins to stop; read from any thread.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
