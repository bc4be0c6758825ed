import Foundation
import Glibc
import Queue
import Support
import Synchronization

/// Hears the wake-ups other Heralds (and this one's writer) send when they queue deliveries: a thread with its own
/// connection LISTENs on `PGQueueStore.readyChannel` and calls `handler` with the app's name for each.
///
/// PostgreSQL does not keep notifications for a listener that was disconnected. So after its connection broke and
/// came back (reconnecting with backoff from 100 ms up to 5 s, LISTENing again), the listener calls `handler` once
/// with "" — something may have been missed; look at every app.
///
///     let listener = try PGListener(url: url) { app in claimers.wake(app.isEmpty ? nil : app) }
///     …
///     listener.close()
public final class PGListener: Sendable {
    private final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    private let closing = Flag()
    private let finished = Rendezvous<Void>()
    /// A pipe whose read end the thread polls beside its connection, so `close` wakes it at once.
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// Connects, LISTENs on `channel` and starts the thread. `handler` runs on that thread: keep it short.
    /// - Throws: `PGError` naming the server (password masked) when it cannot be reached or refuses the login.
    public init(
        url: String, channel: String = PGQueueStore.readyChannel, connectTimeoutSeconds: Int = 10,
        handler: @escaping @Sendable (String) -> Void
    ) throws {
        let connection = try PGConnection(
            url: url, connectTimeoutSeconds: connectTimeoutSeconds, applicationName: "herald-listener")
        try connection.listen(channel)
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else {
            throw PGError(message: "cannot create a pipe for the listener: \(String(cString: strerror(errno)))")
        }
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        (wakeRead, wakeWrite) = (descriptors[0], descriptors[1])
        let box = UncheckedBox(connection)
        let thread = Thread { [closing, finished, wakeRead] in
            Thread.current.name = "herald-pg-listener"
            Self.listen(
                on: box.take(), channel: channel, wakeDescriptor: wakeRead, closing: closing, handler: handler)
            finished.fulfil(.success(()))
        }
        thread.start()
    }

    /// Stops the thread, waking it from its wait, and closes the connection.
    public func close() {
        guard !closing.raised.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var byte: UInt8 = 1
        // Never read: the pipe stays readable, so every later wait of the thread ends at once too.
        _ = write(wakeWrite, &byte, 1)
        try? finished.wait()
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }

    private static func listen(
        on connection: PGConnection, channel: String, wakeDescriptor: Int32, closing: Flag,
        handler: @Sendable (String) -> Void
    ) {
        while !closing.raised.load(ordering: .sequentiallyConsistent) {
            let received: [PGNotification]
            do {
                received = try connection.notifications(waitingUpTo: -1, wakeDescriptor: wakeDescriptor)
            } catch {
                guard !closing.raised.load(ordering: .sequentiallyConsistent) else { return }
                guard reconnect(connection, after: error, wakeDescriptor: wakeDescriptor) else { return }
                handler("")
                continue
            }
            for notification in received where notification.channel == channel { handler(notification.payload) }
        }
    }

    /// Resets the connection (which LISTENs again) with backoff until it is back; false when the wake descriptor
    /// became readable first (closing). Logs once when the connection is lost and once when it is back.
    private static func reconnect(_ connection: PGConnection, after cause: Error, wakeDescriptor: Int32) -> Bool {
        Log.warn("lost the LISTEN connection to PostgreSQL; reconnecting", [
            "server": .string(connection.redactedURL), "error": .string("\(cause)"),
        ])
        var delay: Int32 = 100
        var attempts = 0
        while true {
            var wake = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&wake, 1, delay) > 0 { return false }
            attempts += 1
            do {
                try connection.reset()
            } catch {
                delay = min(delay * 2, 5000)
                continue
            }
            Log.info("listening on PostgreSQL again", [
                "server": .string(connection.redactedURL), "attempts": .int(Int64(attempts)),
            ])
            return true
        }
    }
}
