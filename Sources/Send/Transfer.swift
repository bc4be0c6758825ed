import CCurl
import Posix
import Support

/// One easy handle and everything a request on it needs kept alive until it completes. Transfers are reused
/// from the loop's free list, so the buffers and the header list outlive a single request.
///
/// Owned by the pool's loop thread; curl calls the callbacks below on that same thread.
final class Transfer {
    let easy: UnsafeMutableRawPointer

    // MARK: - The request in flight

    var completion: (@Sendable (TransportResult, Double) -> Void)?
    var submittedAt: Double = 0
    /// Where the request goes, while it is in curl.
    var origin: TransferOrigin?
    /// It found no idle connection when it was handed to curl, and no answer has come yet: one of `origin.opening`
    /// (and of `origin.connecting` until its connection is ready).
    var opening = TransferOrigin.Opening.none

    /// `CURLOPT_POSTFIELDS` points here: curl reads it during the transfer, not when the option is set.
    private var requestBody: UnsafeMutableRawPointer
    private var requestBodyCapacity: Int
    /// Requests curl has been about to send for this transfer: 1, or more when it tried to send it again.
    private var requestsStarted = 0
    /// curl wanted to send the request a second time and was stopped: see `startingRequest`.
    private(set) var refusedResend = false
    /// Where this request's sockets may connect to, and the pool's count they join (`openSocket`).
    private var addressPolicy: AddressPolicy?
    private var counter: UnsafeMutablePointer<herald_socket_counter>?
    /// Addresses the policy refused to this request, and sockets it opened: every address refused and none opened
    /// is a `forbiddenAddress` failure.
    private var addressesRefused = 0
    private var socketsOpened = 0
    var refusedEveryAddress: Bool { addressesRefused > 0 && socketsOpened == 0 }

    /// The list built from `headerListSource`, kept while the next request sends the same headers, which is
    /// every request of one app.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var headerListSource: [(name: String, value: String)] = []

    // MARK: - The response so far

    var responseBody: [UInt8] = []
    var responseHeaders: [(name: String, value: String)] = []
    /// `OutboundRequest.keptResponseHeaders` as bytes, converted only when a request asks for different ones.
    private var keptNames: [[UInt8]]?
    private var keptNamesSource: [String]?
    /// The last header line was one not kept: its folded continuation lines are not kept either.
    private var skippingHeader = false
    /// The largest response body accepted (the pool's); a peer that sends more gets the transfer aborted.
    private var maxResponseBytes = 0
    /// Bytes of the response's header lines so far, bounded by `HTTPClientPool.maxResponseHeaderBytes`.
    private var headerBytes = 0
    /// The header or write callback refused more; the transfer ends with `CURLE_WRITE_ERROR`.
    var responseTooLarge = false

    init?() {
        guard let easy = curl_easy_init() else { return nil }
        self.easy = easy
        requestBodyCapacity = 1024
        requestBody = UnsafeMutableRawPointer.allocate(byteCount: requestBodyCapacity, alignment: 1)
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        requestBody.deallocate()
    }

    /// Resets the handle and sets every option for `request`, which has `timeoutMillis` left. Returns `false` when
    /// curl refused an option (an out-of-memory copy of the URL, in practice); the handle is then not added to the
    /// multi.
    ///
    /// `counter` is the count of open sockets of the request's origin (and the pool's), which the sockets of this
    /// handle keep; `addressPolicy`, where they may connect to (nil: anywhere).
    func prepare(
        _ request: OutboundRequest, timeoutMillis: Int, maxResponseBytes: Int, caFile: String?,
        counter: UnsafeMutablePointer<herald_socket_counter>, addressPolicy: AddressPolicy?
    ) -> Bool {
        curl_easy_reset(easy)
        self.addressPolicy = addressPolicy
        self.counter = counter
        addressesRefused = 0
        socketsOpened = 0
        responseBody.removeAll(keepingCapacity: true)
        responseHeaders.removeAll(keepingCapacity: true)
        self.maxResponseBytes = maxResponseBytes
        headerBytes = 0
        responseTooLarge = false
        requestsStarted = 0
        refusedResend = false
        skippingHeader = false
        if request.keptResponseHeaders != keptNamesSource {
            keptNamesSource = request.keptResponseHeaders
            keptNames = request.keptResponseHeaders?.map { Array($0.utf8) }
        }

        let byteCount = request.body.count
        if byteCount > requestBodyCapacity {
            requestBody.deallocate()
            requestBodyCapacity = max(byteCount, requestBodyCapacity * 2)
            requestBody = UnsafeMutableRawPointer.allocate(byteCount: requestBodyCapacity, alignment: 1)
        }
        request.body.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { requestBody.copyMemory(from: base, byteCount: bytes.count) }
        }
        let context = Unmanaged.passUnretained(self).toOpaque()

        var ok = true
        func check(_ code: CURLcode) { ok = ok && code == CURLE_OK }
        check(herald_curl_easy_setopt_string(easy, CURLOPT_URL, request.url))
        check(herald_curl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(herald_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        // HTTP/1.1 only, over TLS too (ALPN offers http/1.1 alone): HTTP/2 is Herald's own client's (Send/HTTP2).
        check(herald_curl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)))
        check(herald_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1))
        check(herald_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, timeoutMillis)))
        check(herald_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, request.connectTimeoutMillis)))
        // curl allocates an upload buffer for each request and frees it when the request is done, 64 KiB by
        // default: a malloc/free of that size per request (and the heap growing and trimmed around it) for bodies
        // of a few hundred bytes. 16 KiB is libcurl's minimum.
        check(herald_curl_easy_setopt_long(easy, CURLOPT_UPLOAD_BUFFERSIZE, 16_384))
        check(herald_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(byteCount)))
        check(herald_curl_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, requestBody))
        check(herald_curl_easy_setopt_prereq_function(easy, startingRequest))
        check(herald_curl_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, context))
        check(herald_curl_easy_count_sockets(easy, counter))
        if addressPolicy != nil { check(herald_curl_easy_open_sockets_through(easy, openPermittedSocket, context)) }
        if let caFile { check(herald_curl_easy_setopt_string(easy, CURLOPT_CAINFO, caFile)) }
        check(herald_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList(for: request.headers)))
        check(herald_curl_easy_setopt_write_function(easy, writeResponseBody))
        check(herald_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
        check(herald_curl_easy_setopt_header_function(easy, writeResponseHeader))
        check(herald_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context))
        check(herald_curl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, context))
        return ok
    }

    /// The header list for `headers`, rebuilt only when they differ from the last request's. An empty
    /// `Expect:` stops curl from sending `Expect: 100-continue` and waiting for the interim response.
    private func headerList(for headers: [(name: String, value: String)]) -> UnsafeMutablePointer<curl_slist>? {
        if headerList != nil && Self.same(headers, headerListSource) { return headerList }
        curl_slist_free_all(headerList)
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers {
            // "Name:" would make curl drop the header; "Name;" sends it with an empty value.
            let line = header.value.isEmpty ? header.name + ";" : header.name + ": " + header.value
            list = curl_slist_append(list, line)
        }
        list = curl_slist_append(list, "Expect:")
        headerList = list
        headerListSource = headers
        return list
    }

    private static func same(_ lhs: [(name: String, value: String)], _ rhs: [(name: String, value: String)]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in lhs.indices where lhs[index].name != rhs[index].name || lhs[index].value != rhs[index].value {
            return false
        }
        return true
    }

    /// Clears the request's references so a recycled transfer keeps nothing of it but its buffers.
    func finish() {
        completion = nil
        origin = nil
        opening = .none
        responseBody = []
        responseHeaders = []
    }

    // MARK: - Response headers

    /// Called once per header line, status lines included. A status line starts a new response (after a
    /// `100 Continue`), so the headers collected so far are dropped; the first proves that the server took the
    /// connection. False (the transfer is aborted) once the lines pass `HTTPClientPool.maxResponseHeaderBytes`.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        if line.starts(with: Self.statusLinePrefix) {
            responseHeaders.removeAll(keepingCapacity: true)
            skippingHeader = false
            headerBytes = 0
            if opening != .none { origin?.answered(&opening) }
            return true
        }
        headerBytes += line.count
        guard headerBytes <= HTTPClientPool.maxResponseHeaderBytes else {
            responseTooLarge = true
            return false
        }
        keepHeader(line)
        return true
    }

    /// A header line of the final response (or its folded continuation), kept if the request reads it.
    private func keepHeader(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0 && Self.isWhitespace(line[end - 1]) { end -= 1 }
        guard end > 0 else { return }
        if Self.isWhitespace(line[0]) {
            // An obsolete folded continuation of the previous header's value.
            guard !responseHeaders.isEmpty, !skippingHeader else { return }
            var start = 0
            while start < end && Self.isWhitespace(line[start]) { start += 1 }
            responseHeaders[responseHeaders.count - 1].value += " " + String(decoding: line[start..<end], as: UTF8.self)
            return
        }
        guard let colon = line[..<end].firstIndex(of: UInt8(ascii: ":")) else { return }
        var nameEnd = colon
        while nameEnd > 0 && Self.isWhitespace(line[nameEnd - 1]) { nameEnd -= 1 }
        skippingHeader = keptNames.map { names in !names.contains { Self.isName($0, of: line, end: nameEnd) } } ?? false
        if skippingHeader { return }
        var valueStart = colon + 1
        while valueStart < end && Self.isWhitespace(line[valueStart]) { valueStart += 1 }
        let name = String(unsafeUninitializedCapacity: nameEnd) { buffer in
            for index in 0..<nameEnd {
                let byte = line[index]
                buffer[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            }
            return nameEnd
        }
        responseHeaders.append((name, String(decoding: line[valueStart..<end], as: UTF8.self)))
    }

    /// Whether `line[..<end]`, ASCII case ignored, is `name` (lowercase).
    private static func isName(_ name: [UInt8], of line: UnsafeRawBufferPointer, end: Int) -> Bool {
        guard name.count == end else { return false }
        for index in 0..<end {
            let byte = line[index]
            let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            if lower != name[index] { return false }
        }
        return true
    }

    private static let statusLinePrefix: [UInt8] = Array("HTTP/".utf8)

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
            || byte == UInt8(ascii: "\n")
    }

    // MARK: - Sending once

    /// curl is about to send the request on a connection. The second time for one transfer is curl re-sending it
    /// by itself, which it does when a reused keep-alive connection closes before any answer arrived, whether or
    /// not the server already acted on the first: a request Herald would never account for, and perhaps a second
    /// push. Refused: the transfer fails (reported as `reset`) and Herald's own retry policy decides, with the
    /// attempt counted.
    fileprivate func mayStartRequest() -> Bool {
        requestsStarted += 1
        if opening == .connecting { origin?.connected(&opening) }
        if requestsStarted == 1 { return true }
        refusedResend = true
        return false
    }

    // MARK: - Sockets

    /// A socket to `address` for curl, counted, if the address policy permits it; else `CURL_SOCKET_BAD`, and curl
    /// tries the host's next address or fails the transfer.
    fileprivate func openSocket(_ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>) -> Int32 {
        let raw = UnsafeRawBufferPointer(
            start: UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \.addr)!,
            count: Int(address.pointee.addrlen))
        guard addressPolicy?.permits(family: address.pointee.family, sockaddr: raw) ?? true else {
            addressesRefused += 1
            return CURL_SOCKET_BAD
        }
        socketsOpened += 1
        return herald_curl_open_counted_socket(counter, purpose, address)
    }

    // MARK: - Response body

    /// Appends body bytes, or refuses them once the body would pass `maxResponseBytes`.
    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard responseBody.count + bytes.count <= maxResponseBytes else {
            responseTooLarge = true
            return false
        }
        responseBody.append(contentsOf: bytes)
        return true
    }
}

// MARK: - curl callbacks

/// `CURLOPT_WRITEFUNCTION`: the context is the transfer, unretained (the loop keeps it alive).
/// Returning less than was given makes curl abort the transfer.
private let writeResponseBody: herald_curl_data_callback = { buffer, size, count, context in
    let byteCount = size * count
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    let accepted = transfer.receiveBody(UnsafeRawBufferPointer(start: buffer, count: byteCount))
    return accepted ? byteCount : 0
}

/// `CURLOPT_PREREQFUNCTION`: once per request curl is about to send, after the connection is ready.
private let startingRequest: herald_curl_prereq_callback = { context, _, _, _, _ in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    return transfer.mayStartRequest() ? Int32(CURL_PREREQFUNC_OK) : Int32(CURL_PREREQFUNC_ABORT)
}

/// `CURLOPT_OPENSOCKETFUNCTION` of a pool with an address policy: the context is the transfer.
private let openPermittedSocket: herald_curl_opensocket_callback = { context, purpose, address in
    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().openSocket(purpose, address!)
}

/// `CURLOPT_HEADERFUNCTION`: one complete header line per call, CRLF included.
private let writeResponseHeader: herald_curl_data_callback = { buffer, size, count, context in
    let byteCount = size * count
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    return transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: byteCount)) ? byteCount : 0
}
