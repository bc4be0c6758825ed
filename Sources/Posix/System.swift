import Glibc

/// A failed system call: the function that failed and the `errno` it left.
public struct IOError: Error, Equatable, CustomStringConvertible {
    public let errnoCode: CInt
    public let function: String

    public init(errnoCode: CInt, function: String) {
        self.errnoCode = errnoCode
        self.function = function
    }

    public var description: String {
        "\(function)() failed: \(String(cString: strerror(errnoCode))) (errno \(errnoCode))"
    }
}

/// The outcome of a non-blocking call: done with a value, or the kernel would have had to wait.
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

/// Runs one system call the way every socket call in this module is made: `EINTR` is retried,
/// `EAGAIN`/`EWOULDBLOCK` becomes `.wouldBlock`, and any other `-1` throws an `IOError` naming `function`.
/// Modelled on swift-nio's `Sources/NIOPosix/System.swift`.
@inline(__always)
public func syscall<Result: FixedWidthInteger>(
    _ function: StaticString, _ body: () -> Result
) throws(IOError) -> IOResult<Result> {
    while true {
        let result = body()
        guard result == -1 else { return .processed(result) }
        let code = errno
        switch code {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        default: throw IOError(errnoCode: code, function: "\(function)")
        }
    }
}

/// `syscall` for calls that never return `EAGAIN` on the descriptors they are given (bind, listen, setsockopt).
@inline(__always)
@discardableResult
public func blockingSyscall<Result: FixedWidthInteger>(
    _ function: StaticString, _ body: () -> Result
) throws(IOError) -> Result {
    switch try syscall(function, body) {
    case .processed(let value): return value
    case .wouldBlock: throw IOError(errnoCode: EAGAIN, function: "\(function)")
    }
}

/// Ignores `SIGPIPE` for the whole process, once, before the first socket is made: a peer that closes
/// while we write must produce `EPIPE`, never kill Herald. `MSG_NOSIGNAL` on every send covers the rest.
public enum BrokenPipe {
    static let ignored: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()

    public static func ignoreOnce() { _ = ignored }
}
