import Glibc

/// A level-triggered epoll set for a client pool's loop: each socket is watched for reading, writing or both, and
/// `events` says which are ready. One thread owns it.
///
/// ```swift
/// let poller = try Poller()
/// poller.watch(fd, .read, tag: 7)
/// for event in poller.events(timeoutMillis: 250) where event.readiness.contains(.readable) { … }
/// ```
///
/// A descriptor number is reused as soon as it is closed, possibly while events for the old socket are still to be
/// handled in the same batch: an owner that closes sockets as it handles events registers each with a `tag` of its
/// own (never reused) and routes events by it, not by the number.
///
/// The readiness bits are libcurl's `CURL_CSELECT_IN`, `_OUT` and `_ERR` (1, 2, 4), so libcurl's socket interface
/// takes them as they are; a hang-up reads as readable, where the next read finds it.
public final class Poller {
    public enum Interest: Sendable {
        case read, write, readWrite

        /// libcurl's `CURL_POLL_IN` (1), `_OUT` (2), `_INOUT` (3); nil for `CURL_POLL_REMOVE` (4).
        public init?(curl what: Int32) {
            switch what {
            case 1: self = .read
            case 2: self = .write
            case 3: self = .readWrite
            default: return nil
            }
        }

        /// The epoll events it stands for, level-triggered.
        public var events: UInt32 {
            switch self {
            case .read: Linux.epollIn
            case .write: Linux.epollOut
            case .readWrite: Linux.epollIn | Linux.epollOut
            }
        }
    }

    public struct Readiness: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let readable = Readiness(rawValue: 1)
        public static let writable = Readiness(rawValue: 2)
        public static let error = Readiness(rawValue: 4)

        /// What epoll's `events` say: a hang-up reads as readable, where the next read finds it.
        @inline(__always)
        public init(epollEvents flags: UInt32) {
            var readiness: Readiness = []
            if flags & (Linux.epollIn | Linux.epollHup | Linux.epollRdHup) != 0 { readiness.insert(.readable) }
            if flags & Linux.epollOut != 0 { readiness.insert(.writable) }
            if flags & Linux.epollErr != 0 { readiness.insert(.error) }
            self = readiness
        }
    }

    /// A descriptor that is ready, with the tag it was watched with.
    public struct Event: Sendable {
        public var fd: Int32
        public var tag: UInt32
        public var readiness: Readiness
    }

    private let epoll: CInt
    private let capacity = 256
    private let buffer: Linux.EventBuffer
    private var ready: [Event] = []

    public init() throws(IOError) {
        epoll = try Linux.epollCreate()
        buffer = Linux.allocateEvents(capacity: capacity)
    }

    deinit {
        buffer.deallocate()
        close(epoll)
    }

    /// Watches `fd` for `interest` from now on (registered on first use); its events carry `tag`, which every
    /// later call for the same descriptor must repeat. False, with `errno`, when epoll refuses.
    @discardableResult
    public func watch(_ fd: Int32, _ interest: Interest, tag: UInt32 = 0) -> Bool {
        Linux.epollSet(epoll, fd, events: interest.events, tag: tag)
    }

    /// Stops watching `fd`. A descriptor already closed left the set by itself; that is not an error.
    public func remove(_ fd: Int32) {
        Linux.epollRemove(epoll, fd)
    }

    /// Waits up to `timeoutMillis` (at least 1) for sockets to be ready. The array is reused by the next call.
    public func events(timeoutMillis: Int32) -> [Event] {
        ready.removeAll(keepingCapacity: true)
        guard let count = try? Linux.epollWait(epoll, buffer, capacity: capacity, timeoutMillis: max(1, timeoutMillis))
        else { return ready }
        for index in 0..<count {
            let (flags, fd) = Linux.event(in: buffer, at: index)
            ready.append(Event(fd: fd, tag: Linux.tag(in: buffer, at: index), readiness: Readiness(epollEvents: flags)))
        }
        return ready
    }
}
