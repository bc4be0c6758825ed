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
/// One turn: take new submissions → run curl's timeout if due → `curl_multi_info_read` for finished transfers →
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

    /// Runs curl's timeout if it is due, and completes what finished; the wait lasts until curl's next timeout.
    func turn(now: Double) -> Int32 {
        if let due = timerDue, due <= now {
            timerDue = nil
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running)
        }
        collectFinished()
        guard let due = timerDue else { return 1_000 }
        return Int32(min(1_000, ((due - Clock.monotonicSeconds()) * 1_000).rounded(.up)))
    }

    /// Only the transfers of a socket that is ready run (see the type's comment).
    func ready(_ fd: Int32, _ readiness: Poller.Readiness) {
        curl_multi_socket_action(multi, fd, readiness.rawValue, &running)
    }

    func afterEvents(now: Double) {
        collectFinished()
    }

    var isIdle: Bool { active.isEmpty }

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

    func start(_ submission: PoolSubmission) {
        guard let transfer = idle.popLast() ?? Transfer() else {
            complete(submission.completion, .failure(.other("out of memory")), since: submission.submittedAt)
            return
        }
        let counter = core.connectionCounter.pointer
        guard transfer.prepare(
            submission.request, caFile: core.caFile, connectionCounter: counter, addressPolicy: core.addressPolicy)
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
        active[ObjectIdentifier(transfer)] = transfer
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
    /// longer counts in `inFlight`, and the completion holds the only reference to the response buffers.
    private func release(_ transfer: Transfer, result: TransportResult) {
        curl_multi_remove_handle(multi, transfer.easy)
        active[ObjectIdentifier(transfer)] = nil
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
        let cancelled = active.count
        for transfer in Array(active.values) { release(transfer, result: .failure(.cancelled)) }
        idle.removeAll()
        curl_multi_cleanup(multi)
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
