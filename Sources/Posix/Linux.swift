import CLinux
import Glibc

/// The Linux calls the `Glibc` module map leaves out (`sys/epoll.h`, `sys/eventfd.h`, `accept4`), through the
/// `CLinux` shim module: the HTTP server's edge-triggered loops use them directly, the client pools through
/// `Poller` and `WakeUp`.
public enum Linux {
    public static let epollIn = UInt32(EPOLLIN.rawValue)
    public static let epollOut = UInt32(EPOLLOUT.rawValue)
    public static let epollErr = UInt32(EPOLLERR.rawValue)
    public static let epollHup = UInt32(EPOLLHUP.rawValue)
    public static let epollRdHup = UInt32(EPOLLRDHUP.rawValue)
    public static let epollEdgeTriggered = UInt32(EPOLLET.rawValue)

    /// A buffer `epollWait` fills with up to `capacity` events.
    public typealias EventBuffer = UnsafeMutablePointer<epoll_event>

    public static func allocateEvents(capacity: Int) -> EventBuffer {
        .allocate(capacity: capacity)
    }

    public static func epollCreate() throws(IOError) -> CInt {
        try blockingSyscall("epoll_create1") { epoll_create1(CInt(EPOLL_CLOEXEC)) }
    }

    /// Registers `fd` with `events`; the event's data word carries `fd` back.
    public static func epollAdd(_ epoll: CInt, _ fd: CInt, events: UInt32) throws(IOError) {
        _ = try blockingSyscall("epoll_ctl") { herald_epoll_add(epoll, fd, events) }
    }

    /// Changes what `fd` is watched for, registering it if it was not; its events carry `tag` (see `tag(in:at:)`).
    /// False, with `errno`, when epoll refuses.
    @discardableResult
    public static func epollSet(_ epoll: CInt, _ fd: CInt, events: UInt32, tag: UInt32 = 0) -> Bool {
        herald_epoll_set(epoll, fd, events, tag) == 0
    }

    /// Stops watching `fd`. A descriptor already closed left the set by itself; that is not an error.
    public static func epollRemove(_ epoll: CInt, _ fd: CInt) {
        _ = herald_epoll_remove(epoll, fd)
    }

    /// Waits for events into `buffer` (room for `capacity` events); returns how many arrived.
    public static func epollWait(
        _ epoll: CInt, _ buffer: EventBuffer, capacity: Int, timeoutMillis: CInt
    ) throws(IOError) -> Int {
        while true {
            let count = epoll_wait(epoll, buffer, CInt(capacity), timeoutMillis)
            if count >= 0 { return Int(count) }
            // A signal delivered during the wait is not an error; the caller's loop re-checks its timers.
            if errno == EINTR { return 0 }
            throw IOError(errnoCode: errno, function: "epoll_wait")
        }
    }

    /// The `(events, fd)` of entry `index` in a buffer filled by `epollWait`.
    @inline(__always)
    public static func event(in buffer: EventBuffer, at index: Int) -> (events: UInt32, fd: CInt) {
        (herald_epoll_event_flags(buffer, CInt(index)), herald_epoll_event_fd(buffer, CInt(index)))
    }

    /// The tag `Poller.watch` registered with entry `index`'s descriptor.
    @inline(__always)
    static func tag(in buffer: EventBuffer, at index: Int) -> UInt32 {
        herald_epoll_event_tag(buffer, CInt(index))
    }

    public static func eventFD() throws(IOError) -> CInt {
        try blockingSyscall("eventfd") { eventfd(0, CInt(EFD_NONBLOCK) | CInt(EFD_CLOEXEC)) }
    }

    /// `accept4` with `SOCK_NONBLOCK | SOCK_CLOEXEC`: one call instead of accept plus two `fcntl`s.
    public static func accept(_ fd: CInt) throws(IOError) -> IOResult<CInt> {
        try syscall("accept4") {
            herald_accept4(fd, CInt(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
        }
    }
}
