import CSQLite
import Foundation
import Queue

/// Why a backup was not made.
public struct BackupError: Error, CustomStringConvertible {
    public var description: String
}

extension Connection {
    // MARK: - Backup

    /// Writes a consistent copy of the database to `path` with `VACUUM INTO` (one read transaction: the writer keeps
    /// writing meanwhile), created with mode 0600 and synced to disk. Refuses to overwrite anything: `path` must not
    /// exist. Returns the size of the copy in bytes. Call outside a transaction.
    ///
    /// Related SQLite documentation: https://sqlite.org/lang_vacuum.html#vacuuminto
    @discardableResult
    public func backup(to path: String) throws -> Int64 {
        // Creating the file first, exclusively, both refuses an existing file without a race and sets the mode:
        // SQLite would create it with the umask's mode. VACUUM INTO accepts an empty file.
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == EEXIST ? "it already exists" : lastError
            throw BackupError(description: "cannot create \(path): \(reason)")
        }
        close(descriptor)
        do {
            try run("VACUUM INTO ?", .text(path))
            let copy = open(path, O_RDONLY | O_CLOEXEC)
            guard copy >= 0 else { throw BackupError(description: "cannot reopen \(path): \(lastError)") }
            defer { close(copy) }
            guard fsync(copy) == 0 else { throw BackupError(description: "cannot sync \(path): \(lastError)") }
            var info = stat()
            guard fstat(copy, &info) == 0 else { throw BackupError(description: "cannot stat \(path)") }
            return Int64(info.st_size)
        } catch {
            unlink(path)
            throw error
        }
    }
}

private var lastError: String { String(cString: strerror(errno)) }
