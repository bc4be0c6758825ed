import Glibc
import Posix
import Support

/// The pool's thread: takes submissions, puts them on streams, opens connections as the waiting requests need
/// them, writes what a turn produced once per connection, and completes each request once. Created and used on
/// that thread only.
///
/// One turn (`PoolLoop` drives it): take the mailbox → time out what waited too long, look at each connection's
/// liveness and forget origins left with nothing (every `sweepSeconds`) → put waiting requests on connections with
/// room (opening more if needed, a few at a time per origin: `ConnectionRamp`) → flush every connection with frames
/// to send → `epoll_wait` until a socket is ready, the sweep is due or a submitter signals → read what arrived, which
/// finishes requests and frees streams → dispatch and flush again → run the completions of every request finished
/// on the way, together.
final class HTTP2Loop: PoolTransport {
    let core: HTTP2PoolCore
    let shell: PoolShell<HTTP2PoolCore.Resolution>
    let poller: Poller
    /// nil when the TLS context could not be made: every request then fails with `tlsFailure`.
    let tls: TLSContext?
    private let tlsFailure: TransportFailure
    /// Where `SSL_read` decrypts to, for every connection in turn.
    let readBuffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 64 << 10)

    private var origins: [String: HTTP2Origin] = [:]
    /// Every socket open (connecting included) by the tag it is watched with: a descriptor number may be reused while
    /// events for its old socket are still being handled, a tag never is.
    private var bySocket: [UInt32: HTTP2Connection] = [:]
    private var lastTag: UInt32 = 0
    private var byID: [Int: HTTP2Connection] = [:]
    private var nextConnectionID = 0
    /// Origins with requests waiting for a connection that the pool's `maxConnections` did not let open.
    private var starved: [HTTP2Origin] = []
    private var toFlush: [HTTP2Connection] = []
    private var toDispatch: [HTTP2Origin] = []
    /// Requests finished this turn whose completion has not run yet (see `runCompletions`), and the list being run.
    private var finished: [(@Sendable (TransportResult, Double) -> Void, TransportResult, Double)] = []
    private var completing: [(@Sendable (TransportResult, Double) -> Void, TransportResult, Double)] = []
    private var nextSweep = 0.0
    /// The last URL parsed, and what it gave: an app sends every request to one URL.
    private var lastURL = ""
    private var lastTarget: HTTPSTarget?
    /// `lastTarget`'s origin once looked up (its key is a new string each time it is made).
    private var lastOrigin: HTTP2Origin?
    /// The last `keptResponseHeaders` converted to bytes, and what they gave: every request of an app asks for the
    /// same.
    private var lastKept: [String]?
    private var lastKeptNames: [[UInt8]]?

    /// How often deadlines are looked at: requests time out within this much of their `timeoutMillis`.
    private static let sweepSeconds = 0.25
    /// Times a request the server refused unprocessed is sent again before it fails as `reset`.
    static let maxRefusals = 3

    init(core: HTTP2PoolCore) throws(IOError) {
        self.core = core
        shell = core.shell
        poller = try Poller()
        // A server that closes the connection while a TLS record is being written must not kill the process.
        BrokenPipe.ignoreOnce()
        do {
            tls = try TLSContext(caFile: core.caFile, clientIdentity: core.clientIdentity)
            tlsFailure = .other("")
        } catch {
            tls = nil
            tlsFailure = .other(error.description)
            Log.error("TLS set-up failed: no HTTP/2 request can be sent", [
                "pool": .string(core.name), "reason": .string(error.description),
            ])
        }
    }

    deinit {
        readBuffer.deallocate()
    }

    // MARK: - The loop's turn (PoolLoop)

    func receive(_ resolution: HTTP2PoolCore.Resolution) {
        byID[resolution.connection]?.resolved(resolution.addresses)
    }

    /// Deadlines and liveness every `sweepSeconds`, then waiting requests onto streams and the writes; the wait
    /// lasts until the next sweep, or not at all while requests wait to be dispatched.
    func turn(now: Double) -> Int32 {
        if now >= nextSweep {
            sweep(now: now)
            nextSweep = now + Self.sweepSeconds
        }
        dispatchAndFlush(now: now)
        return toDispatch.isEmpty ? Int32(((nextSweep - now) * 1_000).rounded(.up)) : 0
    }

    func ready(_ event: Poller.Event) {
        bySocket[event.tag]?.handle(event.tag, event.readiness)
    }

    func afterEvents(now: Double) {
        dispatchAndFlush(now: now)
    }

    var isIdle: Bool { shell.inFlight.load(ordering: .relaxed) == 0 }

    // MARK: - Requests

    func start(_ submission: PoolSubmission) {
        let url = submission.request.url
        if url != lastURL {
            lastURL = url
            lastTarget = HTTPSTarget(url)
            lastOrigin = nil
        }
        guard let target = lastTarget else {
            viaHTTP1(submission.request, completion: submission.completion, submittedAt: submission.submittedAt)
            return
        }
        guard tls != nil else {
            shell.complete(submission.completion, .failure(tlsFailure), since: submission.submittedAt)
            return
        }
        let origin: HTTP2Origin
        if let known = lastOrigin {
            origin = known
        } else {
            origin = origins[target.origin] ?? HTTP2Origin(target, maxConnections: core.maxConnectionsPerHost)
            origins[origin.key] = origin
            lastOrigin = origin
        }
        if submission.request.keptResponseHeaders != lastKept {
            lastKept = submission.request.keptResponseHeaders
            lastKeptNames = lastKept?.map { Array($0.utf8) }
        }
        origin.waiting.append(HTTP2Stream(submission, target: target, keptNames: lastKeptNames))
        needsDispatch(origin)
    }

    private func needsDispatch(_ origin: HTTP2Origin) {
        if !toDispatch.contains(where: { $0 === origin }) { toDispatch.append(origin) }
    }

    /// Waiting requests onto connections with room, new connections for those left over, then one write per
    /// connection for everything that turn produced, then the completions of the requests the turn finished.
    private func dispatchAndFlush(now: Double) {
        while let origin = toDispatch.popLast() { dispatch(origin, now: now) }
        while let connection = toFlush.popLast() { connection.flush() }
        runCompletions()
    }

    private func dispatch(_ origin: HTTP2Origin, now: Double) {
        var candidate = 0
        while let stream = origin.waiting.first {
            guard !stream.finished else {
                _ = origin.waiting.popFirst()
                continue
            }
            while candidate < origin.connections.count && !origin.connections[candidate].hasRoom { candidate += 1 }
            guard candidate < origin.connections.count else { break }
            _ = origin.waiting.popFirst()
            if !origin.connections[candidate].submit(stream, now: now) {
                origin.connections[candidate].goingAway = true
                origin.waiting.pushFront(stream)
            }
        }
        if origin.http1Until > now {
            // The server chose HTTP/1.1 on a recent handshake: what its HTTP/2 connections (if any) have no room
            // for goes over HTTP/1.1 until it is time to offer h2 again.
            while let stream = origin.waiting.popFirst() {
                guard !stream.finished else { continue }
                // It never reaches `finish`: the HTTP/1.1 pool's completion takes it out of `inFlight`.
                stream.finished = true
                viaHTTP1(stream.request, completion: stream.completion, submittedAt: stream.submittedAt)
            }
            return
        }
        // Each connection still opening will take up to 100 of those left waiting; open more only for the rest, as
        // many at once as the origin's ramp allows.
        var opening = origin.opening
        var uncovered = origin.waiting.count - opening * HTTPClientPool.streamsPerConnection
        while uncovered > 0 && origin.connections.count < core.maxConnectionsPerHost
            && now >= origin.noConnectionsBefore && origin.ramp.allows(opening: opening)
        {
            guard makeRoom(now: now) else {
                if !starved.contains(where: { $0 === origin }) { starved.append(origin) }
                return
            }
            open(origin, for: origin.waiting.first!, now: now)
            opening += 1
            uncovered -= HTTPClientPool.streamsPerConnection
        }
    }

    /// Whether one more connection fits under the pool's `maxConnections` (HTTP/1.1 ones count too), if need be once
    /// the connection idle longest, to any origin, is closed for it.
    private func makeRoom(now: Double) -> Bool {
        guard let limit = core.maxConnections else { return true }
        func total() -> Int { byID.count + (core.fallback.withLock { $0 }?.connections ?? 0) }
        if total() < limit { return true }
        var idlest: HTTP2Connection?
        for connection in byID.values where connection.streams.isEmpty && !connection.isOpening {
            if (connection.idleSince ?? now) < (idlest?.idleSince ?? .infinity) { idlest = connection }
        }
        guard let idlest else { return false }
        idlest.close(.idle, reason: nil)
        return total() < limit
    }

    private func open(_ origin: HTTP2Origin, for stream: HTTP2Stream, now: Double) {
        // No connection left to the origin: what it took before says nothing about now.
        if origin.connections.isEmpty { origin.ramp.restart() }
        nextConnectionID += 1
        let connection = HTTP2Connection(
            id: nextConnectionID, origin: origin, loop: self,
            connectDeadline: now + Double(max(1, stream.request.connectTimeoutMillis)) / 1_000)
        origin.connections.append(connection)
        byID[connection.id] = connection
        let (core, id) = (core, connection.id)
        connection.lookup = core.resolver.resolve(host: origin.host, port: origin.port) { result in
            core.shell.post(HTTP2PoolCore.Resolution(connection: id, addresses: result))
        }
    }

    /// Completes the request once: by then it no longer counts in `inFlight`.
    func finish(_ stream: HTTP2Stream, _ result: TransportResult) {
        guard !stream.finished else { return }
        stream.finished = true
        finished.append((stream.completion, result, stream.submittedAt))
    }

    /// Runs the completions of the requests finished this turn, one after another once every socket has been read:
    /// the delivery engine handles the answers that arrive together in one job on its queue (the first schedules it),
    /// which a completion per frame, spread over the reads, would split.
    private func runCompletions() {
        guard !finished.isEmpty else { return }
        swap(&finished, &completing)
        for (completion, result, submittedAt) in completing { shell.complete(completion, result, since: submittedAt) }
        completing.removeAll(keepingCapacity: true)
    }

    /// Requests this client does not carry (not HTTPS, or a server without HTTP/2) go through libcurl.
    private func viaHTTP1(
        _ request: OutboundRequest, completion: @escaping @Sendable (TransportResult, Double) -> Void,
        submittedAt: Double
    ) {
        let core = self.core
        let pool = core.fallback.withLock { pool in
            if let pool { return pool }
            let made = HTTPClientPool(
                maxConnectionsPerHost: core.http1Connections, maxConnections: core.maxConnections,
                maxResponseBytes: core.maxResponseBytes, name: core.name + "-h1", caFile: core.caFile,
                addressPolicy: core.addressPolicy)
            pool = made
            return made
        }
        pool.submit(request) { result, _ in
            core.shell.complete(completion, result, since: submittedAt)
        }
    }

    // MARK: - From the connections

    /// A socket of `connection`'s: the tag to watch it with.
    func socketOpened(_ connection: HTTP2Connection) -> UInt32 {
        lastTag &+= 1
        if lastTag == 0 { lastTag = 1 }
        bySocket[lastTag] = connection
        core.openConnections.add(1, ordering: .relaxed)
        return lastTag
    }

    func socketClosed(tag: UInt32) {
        bySocket[tag] = nil
        core.openConnections.subtract(1, ordering: .relaxed)
    }

    func markForFlush(_ connection: HTTP2Connection) {
        guard !connection.needsFlush else { return }
        connection.needsFlush = true
        toFlush.append(connection)
    }

    func connectionOpened(_ connection: HTTP2Connection) {
        needsDispatch(connection.origin)
    }

    /// Gone for good, answered or not: it leaves its origin, and makes room for an origin the pool's
    /// `maxConnections` held back.
    func closed(_ connection: HTTP2Connection) {
        byID[connection.id] = nil
        connection.origin.connections.removeAll { $0 === connection }
        if !connection.origin.waiting.isEmpty { needsDispatch(connection.origin) }
        for origin in starved { needsDispatch(origin) }
        starved.removeAll()
    }

    /// A connection could not be opened. The requests waiting fail with `failure` unless another connection is open
    /// or opening to take them; no new connection is tried for a second.
    func openingFailed(_ connection: HTTP2Connection, failure: TransportFailure) {
        let origin = connection.origin
        closed(connection)
        origin.noConnectionsBefore = Clock.monotonicSeconds() + 1
        origin.ramp.restart()
        Log.warn("sender connection failed", [
            "pool": .string(core.name), "host": .string(origin.host), "reason": .string(failure.description),
        ])
        guard origin.connections.isEmpty else { return }
        while let stream = origin.waiting.popFirst() { finish(stream, .failure(failure)) }
    }

    /// The server did not agree to HTTP/2 on this handshake: the connection goes (it carried nothing), and for a
    /// while the origin's requests that its other HTTP/2 connections have no room for go over HTTP/1.1. The other
    /// connections and their streams are left alone: a server behind a load balancer may answer both ways.
    func speaksHTTP1(_ connection: HTTP2Connection) {
        let origin = connection.origin
        let now = Clock.monotonicSeconds()
        if origin.http1Until <= now {
            Log.warn("endpoint did not offer HTTP/2: sending over HTTP/1.1, one connection per request", [
                "pool": .string(core.name), "host": .string(origin.host),
                "retry_h2_after_seconds": .int(Int64(HTTP2Origin.http1Seconds)),
            ])
        }
        origin.http1Until = now + HTTP2Origin.http1Seconds
        connection.close(.connect, reason: nil)
        needsDispatch(origin)
    }

    /// A stream has left `connection`: complete its request, or put it back at the front of the queue if the server
    /// never processed it and it has not been refused too often.
    func streamEnded(_ stream: HTTP2Stream, _ end: HTTP2Connection.StreamEnd, on connection: HTTP2Connection) {
        guard !stream.finished else { return }
        switch end {
        case .response:
            finish(
                stream, .response(status: stream.status, headers: stream.headers, body: stream.body, httpVersion: "2"))
        case .refused where stream.refusals < Self.maxRefusals:
            stream.refusals += 1
            stream.resetForResend()
            connection.origin.waiting.pushFront(stream)
        case .refused, .reset:
            finish(stream, .failure(.reset))
        case .tooLarge:
            finish(stream, .failure(.responseTooLarge))
        }
        // A stream is free: a request waiting for one may take it.
        if !connection.origin.waiting.isEmpty { needsDispatch(connection.origin) }
    }

    // MARK: - Deadlines

    private func sweep(now: Double) {
        var forgettable: [String] = []
        defer {
            for key in forgettable {
                if origins.removeValue(forKey: key) === lastOrigin { lastOrigin = nil }
            }
        }
        for origin in origins.values {
            if origin.isForgettable(now: now) {
                forgettable.append(origin.key)
                continue
            }
            for stream in origin.waiting.removeAll(where: { $0.finished || $0.deadline <= now }) {
                finish(stream, .failure(.timeout))
            }
            // After a failed connection's pause, the next look may open one.
            if !origin.waiting.isEmpty { needsDispatch(origin) }
            for connection in origin.connections {
                if connection.isOpening {
                    if connection.connectDeadline <= now {
                        connection.fail(opening: .timeout)
                    } else if connection.nextAttemptAt <= now {
                        connection.connectNext(now: now)
                    }
                    continue
                }
                for stream in connection.streams.values where !stream.finished && stream.deadline <= now {
                    connection.cancel(stream)
                    finish(stream, .failure(.timeout))
                    // The server may be gone: no new streams on it until a PING says otherwise.
                    connection.suspect = true
                }
                // Gone away and done: nothing more will come on it.
                if connection.goingAway && connection.streams.isEmpty {
                    connection.close(.goAway, reason: nil)
                    continue
                }
                checkLiveness(of: connection, now: now)
            }
        }
    }

    /// A PING when a connection with streams has been quiet for `pingAfter` (or is suspect); closed when the PING
    /// is not answered within `pingTimeout`; closed when it has carried nothing for `idle`.
    private func checkLiveness(of connection: HTTP2Connection, now: Double) {
        let liveness = core.liveness
        if let sentAt = connection.pingSentAt {
            if now - sentAt >= Double(liveness.pingTimeoutMillis) / 1_000 {
                connection.close(.pingTimeout, reason: "no answer to a PING")
            }
            return
        }
        if connection.streams.isEmpty && !connection.suspect {
            let idleSince = connection.idleSince ?? now
            connection.idleSince = idleSince
            if now - idleSince >= Double(liveness.idleMillis) / 1_000 { connection.close(.idle, reason: nil) }
            return
        }
        if connection.suspect || now - connection.quietSince >= Double(liveness.pingAfterMillis) / 1_000 {
            connection.ping(now: now)
        }
    }

    // MARK: - Stopping

    /// Cancels what is left, marks the pool stopped, and closes every connection.
    func stop() {
        var cancelled = 0
        for origin in origins.values {
            while let stream = origin.waiting.popFirst() {
                guard !stream.finished else { continue }
                finish(stream, .failure(.cancelled))
                cancelled += 1
            }
            for connection in origin.connections {
                cancelled += connection.streams.values.filter { !$0.finished }.count
                connection.close(.shutdown, failing: .cancelled, reason: nil)
            }
        }
        runCompletions()
        core.fallback.withLock { $0 }?.shutdown(gracePeriod: 0)
        origins.removeAll()
        Log.info("sender pool stopped", ["pool": .string(core.name), "cancelled": .int(Int64(cancelled))])
    }
}
