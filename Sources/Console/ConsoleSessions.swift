import Support
import Synchronization

/// The console's logins: a random session id in the `herald_console` cookie, the role it was given here. The
/// cookie carries nothing derived from a token, so a stolen cookie never reveals one, and a restart logs everyone
/// out.
public final class ConsoleSessions: Sendable {
    /// A login lasts this long (12 h), then the page asks for the token again.
    public static let lifetimeMillis: Int64 = 12 * 3_600_000
    /// Logins kept at most; the oldest goes first, so no client can grow this without bound.
    public static let maximum = 1000

    private struct Session {
        var role: ConsoleRole
        var expires: Int64
    }

    private let sessions = Mutex<[String: Session]>([:])

    public init() {}

    /// A new session for `role`; returns its id (64 hex digits from the system's random generator).
    public func create(_ role: ConsoleRole, now: Int64) -> String {
        var generator = SystemRandomNumberGenerator()
        let id = (0..<4).map { _ in
            let text = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }.joined()
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expires > now }
            if sessions.count >= Self.maximum, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
                sessions[oldest.key] = nil
            }
            sessions[id] = Session(role: role, expires: now + Self.lifetimeMillis)
        }
        return id
    }

    /// The role of a live session; nil for an unknown or expired one.
    public func role(of id: String, now: Int64) -> ConsoleRole? {
        sessions.withLock { sessions in
            guard let session = sessions[id] else { return nil }
            guard session.expires > now else {
                sessions[id] = nil
                return nil
            }
            return session.role
        }
    }

    public func remove(_ id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }
}
