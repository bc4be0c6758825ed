import Foundation
import Queue
import Storage
import Support

/// `herald backup PATH`: an online, consistent copy of the database.
enum BackupCommand {
    static let help = """
        Usage: herald backup PATH [--db PATH] [--json]

        Writes a consistent copy of the database to PATH while `herald serve` keeps running (SQLite's VACUUM INTO
        reads one snapshot; the service keeps writing meanwhile). The copy is one self-contained file, created
        with mode 0600 and synced to disk. PATH must not exist: backup never overwrites a file.

        To restore: stop `herald serve`, put the copy in place of the database (removing any old -wal and -shm
        files beside it), start again.

        Options:
          --db PATH   SQLite database to copy (default: herald.db, or HERALD_DB)
          --json      {"path", "bytes"}

        Example:
          herald backup /var/backups/herald-$(date +%F).db
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(1, "the path of the copy")
        let target = parsed.positional[0]
        guard !FileManager.default.fileExists(atPath: target) else {
            throw CommandError(description: "\(target) already exists; backup never overwrites a file")
        }
        guard case .sqlite = DatabaseLocation(parsed),
              let connection = (try openExistingDatabase(parsed) as? SQLiteQueueStore)?.connection
        else {
            throw CommandError(description: "backup copies a SQLite file; back up PostgreSQL with its own tools "
                + "(pg_dump, or the base backups and WAL archiving your server already has)")
        }
        let bytes = try connection.backup(to: target)
        if parsed.flag("json") {
            Output.json(["path": .string(target), "bytes": .int(bytes)])
        } else {
            print("copied \(connection.path) to \(target) (\(bytes) bytes)")
        }
        return 0
    }
}
