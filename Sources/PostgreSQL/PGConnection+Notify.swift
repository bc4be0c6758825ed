import CLibPQ
import Foundation

/// A NOTIFY received on a channel this connection listens on.
public struct PGNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
    /// The server process that sent it (`backendProcessID` of the sending connection).
    public var senderProcessID: Int32
}

extension PGConnection {
    /// Starts receiving NOTIFYs on `channel`. Notifications arrive between transactions, so a connection that
    /// listens should do little else (one per process, waiting in `notifications(waitingUpTo:)`).
    public func listen(_ channel: String) throws {
        try execute("LISTEN \(try quotedIdentifier(channel))")
        channels.insert(channel)
    }

    public func unlisten(_ channel: String) throws {
        try execute("UNLISTEN \(try quotedIdentifier(channel))")
        channels.remove(channel)
    }

    /// Sends `payload` to every connection listening on `channel` (when this connection's transaction commits,
    /// at once outside one). Identical notifications in one transaction are delivered once.
    public func notify(_ channel: String, payload: String = "") throws {
        _ = try result("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// The notifications that arrived, waiting up to `timeoutMillis` (-1: without limit) for the first one.
    /// Returns early, possibly with none, when `wakeDescriptor` (an eventfd or a pipe the caller owns, for
    /// shutdown) becomes readable; it is not read here.
    ///
    /// Blocks the calling thread in `poll` on the connection's socket.
    /// - Throws: `PGError` with `isConnectionLost` when the connection broke meanwhile.
    public func notifications(waitingUpTo timeoutMillis: Int32, wakeDescriptor: Int32? = nil) throws
        -> [PGNotification]
    {
        // Anything already read along with earlier results.
        guard PQconsumeInput(handle) == 1 else { throw connectionError(sql: nil) }
        var received = drainNotifications()
        guard received.isEmpty else { return received }

        let socket = PQsocket(handle)
        guard socket >= 0 else { throw connectionError(sql: nil) }
        var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
        if let wakeDescriptor { descriptors.append(pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), timeoutMillis)
        if ready < 0 {
            // Interrupted by a signal: the caller's loop waits again.
            guard errno == EINTR else {
                throw PGError(message: "poll on the connection failed: \(String(cString: strerror(errno)))")
            }
            return []
        }
        if descriptors[0].revents != 0 {
            // Readable, hung up or failed: consuming input tells which.
            guard PQconsumeInput(handle) == 1 else { throw connectionError(sql: nil) }
            received = drainNotifications()
        }
        return received
    }

    private func drainNotifications() -> [PGNotification] {
        var received: [PGNotification] = []
        while let notification = PQnotifies(handle) {
            received.append(
                PGNotification(
                    channel: String(cString: notification.pointee.relname),
                    payload: String(cString: notification.pointee.extra),
                    senderProcessID: notification.pointee.be_pid))
            PQfreemem(notification)
        }
        return received
    }
}
