import Foundation
import Queue
import Storage

/// Bulk changes from the CLI (`prune`, `dead requeue`, `dead purge`) run as many small write transactions rather than
/// one big one: a running `herald serve` waits at most one batch for the write lock, never the whole job.
enum BatchedWrites {
    /// Rows per transaction.
    static let batchSize = 2000
    /// A pause after each batch, so the service's writer, whose busy handler is polling, gets the lock in between.
    static let pauseMicroseconds: useconds_t = 10_000

    /// Runs `step` in its own `BEGIN IMMEDIATE` transaction until it returns false.
    static func repeatUntilDone(_ connection: any Store, _ step: () throws -> Bool) throws {
        while try connection.transaction(step) {
            usleep(pauseMicroseconds)
        }
    }
}
