import Glibc

/// The Linux calls the `Glibc` module map leaves out (`sys/epoll.h`, `sys/eventfd.h`, `accept4`).
///
/// swift-nio reaches them through a C shim module; Herald's package has no shim for them, so they are
/// resolved once with `dlsym` and called through `@convention(c)` function types, which is exactly
/// the C calling convention the header prototypes describe.
enum Linux {
    static let epollIn: UInt32 = 0x001
    static let epollOut: UInt32 = 0x004
    static let epollErr: UInt32 = 0x008
    static let epollHup: UInt32 = 0x010
    static let epollRdHup: UInt32 = 0x2000
    static let epollEdgeTriggered: UInt32 = 1 << 31
    static let epollCtlAdd: CInt = 1

    /// `struct epoll_event` is packed on x86_64 (12 bytes) and naturally aligned elsewhere (16 bytes).
    #if arch(x86_64)
    static let epollEventSize = 12
    static let epollDataOffset = 4
    #else
    static let epollEventSize = 16
    static let epollDataOffset = 8
    #endif

    private typealias EpollCreate1 = @convention(c) (CInt) -> CInt
    private typealias EpollCtl = @convention(c) (CInt, CInt, CInt, UnsafeMutableRawPointer?) -> CInt
    private typealias EpollWait = @convention(c) (CInt, UnsafeMutableRawPointer?, CInt, CInt) -> CInt
    private typealias EventFD = @convention(c) (CUnsignedInt, CInt) -> CInt
    private typealias Accept4 = @convention(c) (
        CInt, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, CInt
    ) -> CInt

    private static func resolve<Function>(_ name: String, as type: Function.Type) -> Function {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, name) else {
            fatalError("libc has no \(name); Herald needs Linux")
        }
        return unsafeBitCast(symbol, to: type)
    }

    private static let epollCreate1Function = resolve("epoll_create1", as: EpollCreate1.self)
    private static let epollCtlFunction = resolve("epoll_ctl", as: EpollCtl.self)
    private static let epollWaitFunction = resolve("epoll_wait", as: EpollWait.self)
    private static let eventFDFunction = resolve("eventfd", as: EventFD.self)
    private static let accept4Function = resolve("accept4", as: Accept4.self)

    static func epollCreate() throws(IOError) -> CInt {
        try blockingSyscall("epoll_create1") { epollCreate1Function(O_CLOEXEC) }
    }

    /// Registers `fd` with `events`; the event's data word carries `fd` back.
    static func epollAdd(_ epoll: CInt, _ fd: CInt, events: UInt32) throws(IOError) {
        var event: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &event) { raw in
            raw.storeBytes(of: events, as: UInt32.self)
            raw.storeBytes(of: UInt64(UInt32(bitPattern: fd)), toByteOffset: epollDataOffset, as: UInt64.self)
        }
        _ = try withUnsafeMutableBytes(of: &event) { (raw) throws(IOError) in
            try blockingSyscall("epoll_ctl") { epollCtlFunction(epoll, epollCtlAdd, fd, raw.baseAddress) }
        }
    }

    /// Waits for events into `buffer` (room for `capacity` events); returns how many arrived.
    static func epollWait(
        _ epoll: CInt, _ buffer: UnsafeMutableRawPointer, capacity: Int, timeoutMillis: CInt
    ) throws(IOError) -> Int {
        while true {
            let count = epollWaitFunction(epoll, buffer, CInt(capacity), timeoutMillis)
            if count >= 0 { return Int(count) }
            // A signal delivered during the wait is not an error; the caller's loop re-checks its timers.
            if errno == EINTR { return 0 }
            throw IOError(errnoCode: errno, function: "epoll_wait")
        }
    }

    /// The `(events, fd)` of entry `index` in a buffer filled by `epollWait`.
    @inline(__always)
    static func event(in buffer: UnsafeMutableRawPointer, at index: Int) -> (events: UInt32, fd: CInt) {
        let entry = buffer + index * epollEventSize
        let events = entry.loadUnaligned(as: UInt32.self)
        let data = entry.loadUnaligned(fromByteOffset: epollDataOffset, as: UInt64.self)
        return (events, CInt(truncatingIfNeeded: data))
    }

    static func eventFD() throws(IOError) -> CInt {
        try blockingSyscall("eventfd") { eventFDFunction(0, O_NONBLOCK | O_CLOEXEC) }
    }

    /// `accept4` with `SOCK_NONBLOCK | SOCK_CLOEXEC`: one call instead of accept plus two `fcntl`s.
    static func accept(_ fd: CInt) throws(IOError) -> IOResult<CInt> {
        try syscall("accept4") {
            accept4Function(fd, nil, nil, CInt(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
        }
    }
}
