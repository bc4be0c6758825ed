import CCurl
import Glibc
import Posix
import Support

/// The pool's thread: drains the mailbox into easy handles, drives the multi handle, and completes each
/// request once. Created and used on that thread only.
///
/// It uses libcurl's socket interface with epoll: curl says which sockets to watch and when its next timeout is,
/// and `curl_multi_socket_action` runs only the transfers of a socket that is ready. `curl_multi_perform` would
/// visit every transfer on every turn, and libcurl 7.88 then polls each transfer's socket once more with a
/// zero timeout: with a thousand requests in flight, thousands of system calls per turn.
///
/// Requests wait here, per origin, until curl may have them (`TransferOrigin`): curl itself would open a connection
/// for each at once.
///
/// One turn: take new submissions → time out requests that waited too long (every `sweepSeconds`) → run curl's
/// timeout if due → `curl_multi_info_read` for finished transfers → hand curl the waiting requests it may have →
/// `epoll_wait` until a socket is ready, curl's timer is due, or a submitter signals the wake-up eventfd → hand
/// each ready socket to `curl_multi_socket_action`.
final class TransferLoop: PoolTransport {
    private let core: PoolCore
    let shell: PoolShell<Never>
    let poller: Poller
    private let multi: UnsafeMutableRawPointer
    /// When curl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` (monotonic seconds); nil: no timeout set.
    private var timerDue: Double?
    private var running: Int32 = 0
    /// Transfers with a request in the multi handle.
    private var active: [ObjectIdentifier: Transfer] = [:]
    /// Reset-ready transfers; their handles' connections stay in the multi's cache between requests.
    private var idle: [Transfer] = []
    /// Beyond this many, a finished transfer is freed rather than kept.
    private let maxIdle: Int
    private var origins: [String: TransferOrigin] = [:]
    /// The origins with requests waiting, each once.
    private var waitingOrigins: [TransferOrigin] = []
    /// The last URL's origin: an app sends every request to one URL.
    private var lastURL = ""
    private var lastOrigin: TransferOrigin?
    private var nextSweep = 0.0

    /// How often waiting requests' deadlines are looked at, and origins left with nothing forgotten.
    private static let sweepSeconds = 0.25

    init(core: PoolCore) throws(IOError) {
        self.core = core
        shell = core.shell
        multi = core.multi.pointer
        // Enough for every request the connections can carry at once: a transfer freed and a new one made for each
        // request costs an easy handle's set-up and buffers every time (a malloc storm at a thousand in flight).
        // The list only ever holds as many as were in flight together, so the bound costs nothing when idle.
        maxIdle = max(64, min(10_000, core.maxConnectionsPerHost * HTTPClientPool.streamsPerConnection))
        poller = try Poller()
    }

    /// Runs the pool until it has drained (`PoolLoop`), with curl's socket and timer callbacks pointing here.
    func run() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = herald_curl_multi_set_event_callbacks(multi, watchSocket, setCurlTimer, context)
        PoolLoop.run(self)
    }

    // MARK: - The loop's turn

    func receive(_ note: Never) {}

    /// Deadlines of waiting requests, curl's timeout if it is due, completes what finished and hands curl what it may
    /// have; the wait lasts until curl's next timeout (or the next sweep, while requests wait).
    func turn(now: Double) -> Int32 {
        if now >= nextSweep {
            sweep(now: now)
            nextSweep = now + Self.sweepSeconds
        }
        if let due = timerDue, due <= now {
            timerDue = nil
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running)
        }
        collectFinished()
        dispatch(now: now)
        var until = waitingOrigins.isEmpty ? 1 : nextSweep - now
        if let due = timerDue { until = min(until, due - Clock.monotonicSeconds()) }
        return Int32((until * 1_000).rounded(.up))
    }

    /// Only the transfers of a socket that is ready run (see the type's comment).
    func ready(_ event: Poller.Event) {
        curl_multi_socket_action(multi, event.fd, event.readiness.rawValue, &running)
    }

    func afterEvents(now: Double) {
        collectFinished()
        dispatch(now: now)
    }

    var isIdle: Bool { active.isEmpty && waitingOrigins.isEmpty }

    // MARK: - curl's socket interface

    /// `CURLMOPT_SOCKETFUNCTION`: what to watch on `fd` (`CURL_POLL_IN`, `_OUT`, `_INOUT`, `_REMOVE`).
    fileprivate func watch(_ fd: Int32, _ what: Int32) {
        guard let interest = Poller.Interest(curl: what) else {
            poller.remove(fd)
            return
        }
        if !poller.watch(fd, interest) {
            Log.warn("epoll_ctl failed", ["pool": .string(shell.name), "errno": .int(Int64(errno))])
        }
    }

    /// `CURLMOPT_TIMERFUNCTION`: run `CURL_SOCKET_TIMEOUT` after `millis` (0: at once; -1: no timer).
    fileprivate func setTimer(_ millis: Int) {
        timerDue = millis < 0 ? nil : Clock.monotonicSeconds() + Double(millis) / 1_000
    }

    // MARK: - Starting and finishing requests

    /// Queues the request behind those of its origin; `dispatch` hands it to curl.
    func start(_ submission: PoolSubmission) {
        let url = submission.request.url
        if url != lastURL || lastOrigin == nil {
            lastURL = url
            let key = TransferOrigin.key(of: url)
            let origin = origins[key] ?? TransferOrigin(
                key: key, maxConnections: core.maxConnectionsPerHost, poolCounter: core.connectionCounter.pointer)
            origins[key] = origin
            lastOrigin = origin
        }
        let origin = lastOrigin!
        if origin.waiting.isEmpty { waitingOrigins.append(origin) }
        origin.waiting.append(submission)
    }

    /// Hands curl, origin by origin and oldest first, the requests it may have: one for each idle connection of the
    /// origin, and more while the origin's ramp lets another connection be opening; never more than the pool's
    /// connections per host and in all.
    private func dispatch(now: Double) {
        var index = 0
        while index < waitingOrigins.count {
            let origin = waitingOrigins[index]
            // No connection left to the origin: what it took before says nothing about now.
            if origin.busy == 0 && origin.sockets == 0 { origin.ramp.restart() }
            while let submission = origin.waiting.first, origin.busy < core.maxConnectionsPerHost,
                active.count < core.maxConnections ?? .max
            {
                let opening = !origin.hasIdleConnection
                guard !opening || origin.mayOpen else { break }
                _ = origin.waiting.popFirst()
                hand(submission, to: origin, opening: opening, now: now)
            }
            if origin.waiting.isEmpty {
                waitingOrigins.remove(at: index)
            } else {
                index += 1
            }
        }
    }

    /// Puts the request into curl, with what is left of its timeout.
    private func hand(_ submission: PoolSubmission, to origin: TransferOrigin, opening: Bool, now: Double) {
        let request = submission.request
        let timeoutMillis = request.timeoutMillis - Int(((now - submission.submittedAt) * 1_000).rounded(.down))
        guard timeoutMillis > 0 else {
            complete(submission.completion, .failure(.timeout), since: submission.submittedAt)
            return
        }
        guard let transfer = idle.popLast() ?? Transfer() else {
            complete(submission.completion, .failure(.other("out of memory")), since: submission.submittedAt)
            return
        }
        guard transfer.prepare(
            request, timeoutMillis: timeoutMillis, maxResponseBytes: core.maxResponseBytes, caFile: core.caFile,
            counter: origin.counter, addressPolicy: core.addressPolicy)
        else {
            idle.append(transfer)
            complete(submission.completion, .failure(.other("invalid request")), since: submission.submittedAt)
            return
        }
        transfer.completion = submission.completion
        transfer.submittedAt = submission.submittedAt
        let code = curl_multi_add_handle(multi, transfer.easy)
        guard code == CURLM_OK else {
            transfer.finish()
            idle.append(transfer)
            let reason = String(cString: curl_multi_strerror(code))
            complete(submission.completion, .failure(.other(reason)), since: submission.submittedAt)
            return
        }
        transfer.origin = origin
        transfer.opening = origin.handed(opening: opening)
        active[ObjectIdentifier(transfer)] = transfer
    }

    /// Requests that waited past their timeout fail as `timeout`; origins left with nothing are forgotten.
    private func sweep(now: Double) {
        for origin in waitingOrigins {
            let expired = origin.waiting.removeAll {
                now - $0.submittedAt >= Double(max(1, $0.request.timeoutMillis)) / 1_000
            }
            for submission in expired {
                complete(submission.completion, .failure(.timeout), since: submission.submittedAt)
            }
        }
        waitingOrigins.removeAll { $0.waiting.isEmpty }
        for (key, origin) in origins where origin.isForgettable {
            origins[key] = nil
            if lastOrigin === origin { lastOrigin = nil }
        }
    }

    private func collectFinished() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            var context: UnsafeMutableRawPointer?
            _ = herald_curl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &context)
            guard let context else { continue }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            let result = self.result(of: transfer, code: code)
            release(transfer, result: result)
        }
    }

    private func result(of transfer: Transfer, code: CURLcode) -> TransportResult {
        guard code == CURLE_OK else {
            if transfer.responseTooLarge { return .failure(.responseTooLarge) }
            // The connection went away after the request was sent and curl wanted to send it again.
            if transfer.refusedResend { return .failure(.reset) }
            if transfer.refusedEveryAddress { return .failure(.forbiddenAddress) }
            return .failure(Curl.failure(code, generic: core.addressPolicy != nil))
        }
        var status = 0
        var version = 0
        _ = herald_curl_easy_getinfo_long(transfer.easy, CURLINFO_RESPONSE_CODE, &status)
        _ = herald_curl_easy_getinfo_long(transfer.easy, CURLINFO_HTTP_VERSION, &version)
        return .response(
            status: status, headers: transfer.responseHeaders, body: transfer.responseBody,
            httpVersion: Curl.httpVersion(version))
    }

    /// Takes the transfer out of the multi, recycles it, then runs the completion: by then the request no
    /// longer counts in `inFlight`, and the completion holds the only reference to the response buffers. A
    /// transfer that was opening a connection and ended without an answer sets its origin's ramp back.
    private func release(_ transfer: Transfer, result: TransportResult) {
        curl_multi_remove_handle(multi, transfer.easy)
        active[ObjectIdentifier(transfer)] = nil
        transfer.origin?.finished(transfer.opening)
        let completion = transfer.completion
        let submittedAt = transfer.submittedAt
        transfer.finish()
        if idle.count < maxIdle { idle.append(transfer) }
        complete(completion, result, since: submittedAt)
    }

    private func complete(
        _ completion: (@Sendable (TransportResult, Double) -> Void)?, _ result: TransportResult,
        since submittedAt: Double
    ) {
        shell.complete(completion, result, since: submittedAt)
    }

    // MARK: - Stopping

    /// Cancels what is left and frees every handle; `PoolLoop` then marks the pool stopped, after which no one
    /// wakes the multi handle.
    func stop() {
        var cancelled = active.count
        for origin in waitingOrigins {
            while let submission = origin.waiting.popFirst() {
                complete(submission.completion, .failure(.cancelled), since: submission.submittedAt)
                cancelled += 1
            }
        }
        waitingOrigins.removeAll()
        for transfer in Array(active.values) { release(transfer, result: .failure(.cancelled)) }
        idle.removeAll()
        curl_multi_cleanup(multi)
        // Only now: closing the cached connections counted their sockets in their origins' counters.
        origins.removeAll()
        lastOrigin = nil
        Log.info("sender pool stopped", ["pool": .string(shell.name), "cancelled": .int(Int64(cancelled))])
    }
}

// MARK: - curl callbacks (on the loop thread, from inside curl_multi_* calls)

private let watchSocket: herald_curl_socket_callback = { _, fd, what, context, _ in
    Unmanaged<TransferLoop>.fromOpaque(context!).takeUnretainedValue().watch(fd, what)
    return 0
}

private let setCurlTimer: herald_curl_timer_callback = { _, millis, context in
    Unmanaged<TransferLoop>.fromOpaque(context!).takeUnretainedValue().setTimer(millis)
    return 0
}
