import Foundation

/// A file for a new key (`webpush-keys`, `secrets-key`, `webhook-secret`): created mode 0600, never over an existing
/// file, synced to disk before the command says it is written.
public enum NewKeyFile {
    /// Creates `path` holding `text`; `keepsExisting` says why an existing file is left alone, for the error.
    public static func write(_ text: String, to path: String, keepsExisting: String) throws {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST {
                throw CommandError(description: "\(path) already exists; \(keepsExisting)")
            }
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
