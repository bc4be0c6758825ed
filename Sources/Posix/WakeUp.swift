import Glibc

/// An eventfd that wakes a loop blocked in epoll: any thread signals, the loop drains. Open as long as its owner
/// lives, so a late signal never touches a closed or reused descriptor.
public struct WakeUp: Sendable {
    public let fd: Int32

    public init() throws(IOError) {
        fd = try Linux.eventFD()
    }

    /// Makes it readable; any thread. A counter already non-zero (EAGAIN) wakes the loop all the same.
    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Reads it back to not readable; the loop's thread.
    public func drain() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }

    public func close() {
        _ = Glibc.close(fd)
    }
}
