import Foundation

/// A new file for a secret a command makes (`webpush-keys --out`, `webhook-secret --out`).
enum SecretFile {
    /// Creates `path` (mode 0600, never over an existing file: `existing` says why) holding `text`, synced to disk.
    static func create(_ path: String, holding text: String, existing: String) throws {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST { throw CommandError(description: "\(path) already exists; \(existing)") }
            throw CommandError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var failure: Int32 = 0
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count, failure == 0 {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
            } else if written < 0, errno != EINTR {
                failure = errno
            }
        }
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure != 0 {
            unlink(path)
            throw CommandError(description: "cannot write \(path): \(String(cString: strerror(failure)))")
        }
    }
}
