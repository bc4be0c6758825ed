import CLibPQ
import Foundation

/// One PostgreSQL connection through libpq. Not thread-safe: exactly one thread uses it at a time, like Storage's
/// `Connection`, which is why it is not `Sendable`.
///
/// Every call blocks the calling thread until the server answers (libpq's blocking API). Call it from a thread
/// the code owns (a writer thread, a `DispatchQueue`, a CLI command), never from Swift concurrency's cooperative
/// pool, whose few threads would stall.
///
/// Statements are prepared once per SQL text (`PQprepare`, cached by text) and run with bound parameters
/// (`PQexecPrepared`); only `execute` sends SQL text as it is, for fixed statements without values (DDL,
/// migrations, transaction control).
///
///     let connection = try PGConnection(url: "postgresql://herald:secret@127.0.0.1:5432/herald")
///     try connection.run("INSERT INTO apps (name) VALUES ($1) ON CONFLICT DO NOTHING", "default")
///     let paused = try connection.queryOne("SELECT paused FROM apps WHERE name = $1", ["default"]) { $0.int(0) }
///
/// Related PostgreSQL documentation: https://www.postgresql.org/docs/current/libpq.html
public final class PGConnection {
    let handle: OpaquePointer
    /// The connection string with its password masked: what messages and logs may show.
    public let redactedURL: String
    /// Passwords from the connection string, removed from any message libpq or the server writes.
    private let secrets: [String]
    /// SQL text → name of the prepared statement on this session.
    private var statements: [String: String] = [:]
    private var statementCounter = 0
    /// Channels to LISTEN on again after `reset()`, which starts a new session.
    var channels: Set<String> = []
    var savepointDepth = 0
    /// A transaction's BEGIN not sent yet: it goes out with the transaction's first statement
    /// (`begin(sendingAhead:begun:)`).
    var pendingBegin: PendingBegin?
    /// Round trips so far: each time this connection sent something and waited for the server's answer. What a
    /// write costs on a database a network away, where each takes milliseconds.
    var roundTrips = 0

    /// Connects to `url` (`postgres://` or `postgresql://` URI, or libpq keyword/value string; `sslmode` and every
    /// other libpq parameter work as libpq documents them). Values in the string win over these defaults.
    ///
    /// - Throws: `PGError` naming the server with the password masked, e.g. when it cannot be reached within
    ///   `connectTimeoutSeconds` or refuses the login.
    public init(url: String, connectTimeoutSeconds: Int = 10, applicationName: String = "herald") throws {
        redactedURL = PGConnectionString.redacted(url)
        secrets = PGConnectionString.secrets(in: url)
        if let problem = PGConnectionString.problem(in: url) {
            throw PGError(message: "invalid PostgreSQL connection string: \(problem)")
        }
        // Keywords are processed in order and later ones win: the defaults come before `dbname`, which libpq
        // expands into the parameters the string holds. TCP keepalives after 30 s idle notice a server or network
        // that vanished silently within about a minute, instead of the kernel's two hours, so a connection that
        // waits for NOTIFYs learns it is lost (unix sockets ignore them).
        let defaults = [
            ("connect_timeout", String(connectTimeoutSeconds)), ("fallback_application_name", applicationName),
            ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
        ]
        let keywords = defaults.map(\.0) + ["dbname"]
        let values = defaults.map(\.1) + [url]
        let connection = withCStrings(keywords) { keywords in
            withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else {
            throw PGError(message: "cannot connect to \(redactedURL): out of memory", isConnectionLost: true)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines
            PQfinish(connection)
            let scrubbed = PGConnectionString.scrub(message, secrets: secrets)
            throw PGError(
                sqlState: "08001", message: "cannot connect to \(redactedURL): \(scrubbed)", isConnectionLost: true)
        }
        handle = connection
        // libpq prints notices (`relation … already exists, skipping`) on stderr; Herald's stderr is JSON lines.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        configureSession()
    }

    /// Every session without JIT compilation. PostgreSQL compiles a statement whose estimated cost passes
    /// `jit_above_cost`, which a set-based insert of a group's thousands of messages does (an `unnest` is estimated,
    /// joined, at far more rows than it has): compiling took 1.6 s of a 1.7 s statement that runs in 68 ms without
    /// it. Herald's statements are many and short; none gains from it. A server without the setting (before 11)
    /// has no JIT either.
    private func configureSession() {
        _ = try? execute("SET jit = off")
    }

    deinit { PQfinish(handle) }

    // MARK: - Statements

    /// Runs SQL that takes no arguments (DDL, migrations, several statements separated by `;`) as it is, through
    /// the simple query protocol. Never build this text from values: use `run` with parameters for those.
    @discardableResult
    public func execute(_ sql: String) throws -> PGResult {
        if pendingBegin != nil, let failure = try exchange([]).failure { throw failure.error }
        roundTrips += 1
        return try check(PQexec(handle, sql), sql: sql)
    }

    /// Runs a prepared statement with `arguments` bound to `$1`, `$2`…; returns its result.
    @discardableResult
    public func result(_ sql: String, _ arguments: [PGValue]) throws -> PGResult {
        if pendingBegin != nil {
            // In the same round trip as the BEGIN before it.
            let (results, failure) = try exchange([PGStatement(sql, arguments)])
            if let failure { throw failure.error }
            return results[0]
        }
        let name = try prepared(sql)
        roundTrips += 1
        let result = try withParameters(arguments, sql: sql) { count, values in
            PQexecPrepared(handle, name, count, values, nil, nil, 0)
        }
        return try check(result, sql: sql)
    }

    /// Runs a statement that returns no rows; returns the number of rows it changed.
    @discardableResult
    public func run(_ sql: String, _ arguments: PGValue...) throws -> Int {
        try result(sql, arguments).affectedRows
    }

    /// `run` with the arguments as an array, for statements whose number of parameters is decided at run time.
    @discardableResult
    public func run(_ sql: String, _ arguments: [PGValue]) throws -> Int {
        try result(sql, arguments).affectedRows
    }

    /// All rows of a query, each mapped by `row`.
    public func query<T>(_ sql: String, _ arguments: [PGValue] = [], row: (PGRow) throws -> T) throws -> [T] {
        try result(sql, arguments).map(row)
    }

    /// The first row of a query, mapped by `row`, or nil.
    public func queryOne<T>(_ sql: String, _ arguments: [PGValue] = [], row: (PGRow) throws -> T) throws -> T? {
        let result = try result(sql, arguments)
        return result.count > 0 ? try row(result[0]) : nil
    }

    /// The name of the prepared statement for `sql` on this session, preparing it the first time.
    func prepared(_ sql: String) throws -> String {
        if let name = statements[sql] { return name }
        statementCounter += 1
        let name = "herald_\(statementCounter)"
        // Parameter types are left to the server, which infers them from the statement.
        roundTrips += 1
        try check(PQprepare(handle, name, sql, 0, nil), sql: sql)
        statements[sql] = name
        return name
    }

    /// Calls `body` with the arguments as NUL-terminated text (nil for NULL), the layout `PQexecPrepared` and
    /// `PQsendQueryPrepared` take.
    func withParameters<R>(
        _ arguments: [PGValue], sql: String, _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?) -> R
    ) throws -> R {
        if arguments.isEmpty { return body(0, nil) }
        var buffer: [UInt8] = []
        var offsets: [Int?] = []
        offsets.reserveCapacity(arguments.count)
        for (position, argument) in arguments.enumerated() {
            guard let text = argument.textFormat else {
                offsets.append(nil)
                continue
            }
            let start = buffer.count
            buffer.append(contentsOf: text.utf8)
            // Text-format parameters end at the first NUL, which PostgreSQL's text cannot hold either: refuse
            // rather than store a silently shortened value.
            guard !buffer[start...].contains(0) else {
                throw PGError(
                    sqlState: "22021", message: "parameter $\(position + 1) contains a NUL character", sql: sql)
            }
            offsets.append(start)
            buffer.append(0)
        }
        return buffer.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
            let pointers = offsets.map { $0.map { UnsafePointer(base + $0) } }
            return pointers.withUnsafeBufferPointer { body(Int32(arguments.count), $0.baseAddress) }
        }
    }

    /// The result when it succeeded; the error it reports otherwise.
    @discardableResult
    func check(_ result: OpaquePointer?, sql: String?) throws -> PGResult {
        guard let result else {
            // libpq returns no result only when it could not send the command or is out of memory.
            throw connectionError(sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PGResult(result)
        default:
            let error = PGError(
                result: result, sql: sql, connectionLost: PQstatus(handle) != CONNECTION_OK,
                scrub: { PGConnectionString.scrub($0, secrets: self.secrets) })
            PQclear(result)
            throw error
        }
    }

    /// The error libpq reports for the connection itself (nothing from the server).
    func connectionError(sql: String?) -> PGError {
        let message = String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines
        let lost = PQstatus(handle) != CONNECTION_OK
        return PGError(
            sqlState: lost ? "08006" : nil,
            message: PGConnectionString.scrub(message.isEmpty ? "no result from libpq" : message, secrets: secrets),
            sql: sql, isConnectionLost: lost)
    }

    // MARK: - Connection state

    /// False once the connection broke (the server went away, the network failed). A broken connection stays
    /// broken until `reset()`.
    public var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Reads, without waiting, whatever the server sent that nobody asked for: a server that ended the session while
    /// it was idle left its goodbye and the closed socket there. False when the connection turns out broken.
    func readUnasked() -> Bool {
        // Twice: a read that finds the goodbye stops there; the next finds the end of the stream behind it.
        PQconsumeInput(handle) == 1 && PQconsumeInput(handle) == 1 && isConnected
    }

    /// Reconnects with the same parameters (a new session: prepared statements are prepared again on use, and
    /// the channels this connection listened on are listened on again).
    public func reset() throws {
        PQreset(handle)
        statements.removeAll()
        savepointDepth = 0
        pendingBegin = nil
        guard PQstatus(handle) == CONNECTION_OK else {
            throw connectionError(sql: nil)
        }
        configureSession()
        for channel in channels { try execute("LISTEN \(try quotedIdentifier(channel))") }
    }

    /// A transaction is open on this connection (possibly failed, waiting for ROLLBACK).
    public var isInTransaction: Bool {
        if pendingBegin != nil { return true }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// The server's version as a number: 150004 for 15.4.
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// The server process serving this connection (`pg_stat_activity.pid`, the sender of its NOTIFYs).
    public var backendProcessID: Int32 { PQbackendPID(handle) }

    /// `name` quoted as an SQL identifier (`"name"`), for the few statements that take no parameters in its
    /// place (LISTEN).
    func quotedIdentifier(_ name: String) throws -> String {
        guard let quoted = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw PGError(message: "cannot quote identifier: \(connectionError(sql: nil).message)")
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
