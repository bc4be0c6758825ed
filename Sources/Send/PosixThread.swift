import Foundation
import Glibc

/// A joinable POSIX thread, so the pool's loop runs on a thread of its own (never Swift concurrency's
/// cooperative pool) and `shutdown` can wait for it to end.
struct PosixThread: Sendable {
    private let id: pthread_t

    /// Starts `body` on a new thread named `name` (cut to the 15 bytes Linux keeps).
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody {
            // Glibc's module map hides `pthread_setname_np`; Foundation names the current thread with it.
            Thread.current.name = String(decoding: Array(name.utf8.prefix(15)), as: UTF8.self)
            body()
        }).toOpaque()
        var id = pthread_t()
        let result = pthread_create(&id, nil, { context in
            Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
            return nil
        }, box)
        precondition(result == 0, "pthread_create failed: \(result)")
        self.id = id
    }

    var isCurrent: Bool { pthread_equal(id, pthread_self()) != 0 }

    /// Waits for the thread to end. Must not be called on the thread itself.
    func join() {
        precondition(!isCurrent, "a thread cannot join itself")
        _ = pthread_join(id, nil)
    }

    /// Lets the thread end on its own without anyone joining it.
    func detach() {
        _ = pthread_detach(id)
    }

    /// Waits for the thread to end, or, called on the thread itself (a pool shut down from one of its own
    /// completions), lets it end on its own.
    func end() {
        if isCurrent { detach() } else { join() }
    }
}

private final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
