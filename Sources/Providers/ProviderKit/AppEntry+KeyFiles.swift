import Foundation
import OAuth
import Support

extension AppEntry {
    /// The P-256 private key (PEM) in `source`, for `provider`'s app `app`; an error that says what `expected` is.
    public static func readP256Key(
        _ source: SecretSource, app: String, provider: String, expected: String
    ) throws(ConfigurationError) -> P256PrivateKey {
        let text = try source.text(app: app, what: "\(provider) key file")
        do {
            return try P256PrivateKey(pem: text)
        } catch {
            throw ConfigurationError("\(provider) app \"\(app)\": \(source.place) is not \(expected): \(error)")
        }
    }

    /// A key file that group or other users may read gets a warning (it is read all the same: refusing would stop
    /// a service over a mode): `what` names it, "the service account file".
    public static func warnIfOthersCanRead(_ path: String, _ what: String, app: String?) {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & 0o077 != 0 {
            let message = "\(what) can be read by other users: chmod 600 it"
            if let app {
                Log.warn(message, ["app": .string(app), "file": .string(path)])
            } else {
                Log.warn(message, ["file": .string(path)])
            }
        }
    }
}
