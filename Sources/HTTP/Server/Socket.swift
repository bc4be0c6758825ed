import Glibc
import Posix

/// Listening sockets and the options Herald sets on sockets.
enum Socket {
    /// A bound, listening, non-blocking socket and the address it really has (the port the kernel chose for 0).
    static func listen(on address: ListenAddress, backlog: Int) throws -> (fd: CInt, bound: ListenAddress) {
        BrokenPipe.ignoreOnce()
        switch address {
        case .tcp(let host, let port):
            return try listenTCP(host: host, port: port, backlog: backlog)
        case .unix(let path):
            return (try listenUnix(path: path, backlog: backlog), address)
        }
    }

    private static let streamFlags = CInt(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)

    static func setNoDelay(_ fd: CInt) {
        var on: CInt = 1
        _ = setsockopt(fd, CInt(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<CInt>.size))
    }

    /// Removes the socket file of a Unix listener; anything else at the path is left alone.
    static func unlinkSocketFile(_ path: String) {
        var info = stat()
        if lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK {
            unlink(path)
        }
    }

    // MARK: - TCP

    private static func listenTCP(host: String, port: Int, backlog: Int) throws -> (fd: CInt, bound: ListenAddress) {
        var storage = sockaddr_storage()
        let length = try resolve(host: host, port: port, into: &storage)
        let fd = try blockingSyscall("socket") { Glibc.socket(CInt(storage.ss_family), streamFlags, 0) }
        do {
            var on: CInt = 1
            try blockingSyscall("setsockopt") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<CInt>.size))
            }
            _ = try withUnsafePointer(to: &storage) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(IOError) in
                    try blockingSyscall("bind") { bind(fd, address, length) }
                }
            }
            try blockingSyscall("listen") { Glibc.listen(fd, CInt(clamping: backlog)) }
            var bound = sockaddr_storage()
            var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = try withUnsafeMutablePointer(to: &bound) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(IOError) in
                    try blockingSyscall("getsockname") { getsockname(fd, address, &boundLength) }
                }
            }
            return (fd, .tcp(host: host, port: Int(boundPort(bound))))
        } catch {
            close(fd)
            throw error
        }
    }

    /// Fills `storage` with the address to bind: the first `SocketAddress.lookUp` gives (a numeric address needs
    /// no lookup; `localhost` is 127.0.0.1).
    private static func resolve(host: String, port: Int, into storage: inout sockaddr_storage) throws -> socklen_t {
        let name = host.lowercased() == "localhost" ? "127.0.0.1" : host
        let addresses: [SocketAddress]
        do {
            addresses = try SocketAddress.lookUp(host: name, port: port, numericOnly: false)
        } catch {
            throw HTTPServerError("cannot resolve listen host \"\(host)\": \(error.reason)")
        }
        guard let address = addresses.first(where: { $0.family == AF_INET || $0.family == AF_INET6 }),
              address.bytes.count <= MemoryLayout<sockaddr_storage>.size
        else {
            throw HTTPServerError("listen host \"\(host)\" resolved to an address that is neither IPv4 nor IPv6")
        }
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyBytes(from: address.bytes)
        }
        return socklen_t(address.bytes.count)
    }

    private static func boundPort(_ storage: sockaddr_storage) -> UInt16 {
        var storage = storage
        return withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) }
    }

    // MARK: - Unix

    private static func listenUnix(path: String, backlog: Int) throws -> CInt {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count <= ListenAddress.maxUnixPathBytes else {
            throw HTTPServerError("unix socket path is longer than \(ListenAddress.maxUnixPathBytes) bytes: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        try removeStaleSocket(path: path, address: address)
        let fd = try blockingSyscall("socket") { Glibc.socket(AF_UNIX, streamFlags, 0) }
        do {
            try bindUnix(fd, to: address)
            try blockingSyscall("chmod") { chmod(path, unixSocketMode) }
            try blockingSyscall("listen") { Glibc.listen(fd, CInt(clamping: backlog)) }
            return fd
        } catch {
            close(fd)
            unlinkSocketFile(path)
            throw error
        }
    }

    /// Who may connect to a Unix socket: its owner and its group.
    static let unixSocketMode: mode_t = 0o660

    /// Binds `fd`, creating the socket file. The file never exists with more access than `unixSocketMode`:
    /// bind(2) gives it the socket's own mode (0777) less the umask, so a chmod after bind would leave a window
    /// in which anyone the umask lets through (everyone, under umask 0) could connect. Linux takes the socket's
    /// mode from fchmod(2) on the unbound socket, so the file is born with `unixSocketMode` less the umask, and
    /// the chmod after it can only widen to the final mode, never beyond. The process-wide umask itself is left
    /// alone: other threads may be creating files (the database's WAL) at the same moment.
    static func bindUnix(_ fd: CInt, to address: sockaddr_un) throws(IOError) {
        try blockingSyscall("fchmod") { fchmod(fd, unixSocketMode) }
        var address = address
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                Result { () throws(IOError) in
                    try blockingSyscall("bind") { bind(fd, raw, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
        }
        _ = try result.get()
    }

    /// A socket file left by a process that died is removed; one a live server still answers on is not.
    private static func removeStaleSocket(path: String, address: sockaddr_un) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw HTTPServerError("\(path) exists and is not a socket; refusing to replace it")
        }
        let probe = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return }
        defer { close(probe) }
        var address = address
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
        if connected { throw HTTPServerError("another server is listening on \(path)") }
        unlink(path)
    }
}
