import Glibc

/// An incremental HTTP/1.1 request parser with no sockets in it: the connection appends bytes as they arrive
/// and asks for the `next()` event. Bodies are framed by `Content-Length` only.
///
/// ```swift
/// var parser = HTTPRequestParser(maxHeaderBytes: 16 * 1024)
/// parser.append(bytes)
/// switch parser.next(admit: { head, bodyLength in nil }) {   // nil: read the body
/// case .request(let parsed): ...
/// case .continueExpected: ...           // write "HTTP/1.1 100 Continue", then feed the body
/// case .needMoreData: ...
/// case .refused(let response): ...      // admit's answer: write it and close, the body unread
/// case .failure(let error): ...         // answer error.response and close
/// }
/// ```
///
/// Pipelined requests stay buffered until `next()` is asked again, so the caller controls their pace.
/// Related: RFC 9112 (HTTP/1.1 message syntax).
struct HTTPRequestParser {
    enum Event {
        case needMoreData
        /// The head asked for `Expect: 100-continue` and its body is within the limit but not here yet.
        case continueExpected
        case request(ParsedRequest)
        /// `admit` answered the head: the body is never read; the parser stays refused, the connection
        /// answers and closes.
        case refused(HTTPResponse)
        /// The request is unusable; the parser stays failed, the connection answers and closes.
        case failure(HTTPRequestError)
    }

    /// A complete request and what the connection should do after answering it.
    struct ParsedRequest {
        var request: HTTPRequest
        /// Whether the connection may stay open after the response.
        var keepAlive: Bool
        /// HTTP/1.0 keep-alive is opt-in, so its responses name it with `Connection: keep-alive`.
        var isHTTP10: Bool
    }

    enum Phase: Equatable {
        /// Nothing of the next request has arrived.
        case idle
        case head
        case body
    }

    private enum State {
        /// Looking for the empty line; `lineStart` and `scanned` are offsets from `start`, so bytes
        /// arriving one at a time are never scanned twice.
        case head(lineStart: Int, scanned: Int)
        case body(ParsedRequest, length: Int)
        case refused(HTTPResponse)
        case failed(HTTPRequestError)
    }

    private struct Head {
        var method: String
        var target: String
        var isHTTP10: Bool
        var headers: [(name: String, value: String)]
        var contentLength: Int
        var keepAlive: Bool
        var expectContinue: Bool
    }

    let maxHeaderBytes: Int
    /// The client, stamped on every request parsed here.
    let peer: PeerAddress?
    private var storage: [UInt8] = []
    /// The first byte not consumed by an earlier request.
    private var start = 0
    private var state = State.head(lineStart: 0, scanned: 0)

    init(maxHeaderBytes: Int, peer: PeerAddress? = nil) {
        self.maxHeaderBytes = maxHeaderBytes
        self.peer = peer
    }

    /// Bytes received but not yet consumed by a request.
    var bufferedByteCount: Int { storage.count - start }

    var phase: Phase {
        switch state {
        case .head: start == storage.count ? .idle : .head
        case .body: .body
        case .refused, .failed: .head
        }
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start * 2 >= storage.count {
            storage.removeSubrange(0..<start)
            start = 0
        }
        storage.append(contentsOf: bytes.bindMemory(to: UInt8.self))
    }

    mutating func append(_ bytes: some Sequence<UInt8>) {
        Array(bytes).withUnsafeBytes { append($0) }
    }

    /// Advances as far as the buffered bytes allow. `admit(head, bodyLength)` is asked once per request, as
    /// soon as its head is complete and before any of its body is consumed (`head.body` is empty); a response
    /// refuses the request, nil lets it in.
    mutating func next(admit: (_ head: HTTPRequest, _ bodyLength: Int) -> HTTPResponse?) -> Event {
        switch state {
        case .refused(let response):
            return .refused(response)
        case .failed(let error):
            return .failure(error)
        case .body(let parsed, let length):
            return bufferedByteCount >= length ? completeBody(parsed, length: length) : .needMoreData
        case .head(let lineStart, let scanned):
            return parseHead(lineStart: lineStart, scanned: scanned, admit: admit)
        }
    }

    // MARK: - Head

    private mutating func parseHead(
        lineStart: Int, scanned: Int, admit: (HTTPRequest, Int) -> HTTPResponse?
    ) -> Event {
        var lineStart = lineStart
        var scanned = scanned
        if lineStart == 0 {
            // RFC 9112 §2.2: ignore empty lines before a request line (old clients send CRLF after a body).
            let before = start
            skipLeadingEmptyLines()
            if start != before { scanned = 0 }
        }
        let end: Int? = storage.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress! + start
            let count = buffer.count - start
            var position = max(scanned, lineStart)
            while position < count {
                guard let found = memchr(base + position, 0x0A, count - position) else { break }
                let newline = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
                let isEmptyLine = newline == lineStart || (newline == lineStart + 1 && base[lineStart] == 0x0D)
                if isEmptyLine && lineStart > 0 { return newline + 1 }
                lineStart = newline + 1
                position = newline + 1
            }
            return nil
        }
        guard let headLength = end else {
            if bufferedByteCount > maxHeaderBytes { return fail(.headTooLarge) }
            state = .head(lineStart: lineStart, scanned: bufferedByteCount)
            return .needMoreData
        }
        guard headLength <= maxHeaderBytes else { return fail(.headTooLarge) }
        let parsed = storage.withUnsafeBufferPointer { buffer in
            Self.parse(UnsafeBufferPointer(rebasing: buffer[start..<start + headLength]))
        }
        let head: Head
        switch parsed {
        case .success(let value): head = value
        case .failure(let error): return fail(error)
        }
        start += headLength
        let request = ParsedRequest(
            request: HTTPRequest(
                method: head.method, target: head.target, headers: head.headers,
                version: head.isHTTP10 ? .http1_0 : .http1_1, peer: peer),
            keepAlive: head.keepAlive, isHTTP10: head.isHTTP10)
        if let answer = admit(request.request, head.contentLength) {
            state = .refused(answer)
            // Whatever of the body came with the head is dropped, never handed on.
            storage = []
            start = 0
            return .refused(answer)
        }
        if head.contentLength == 0 {
            state = .head(lineStart: 0, scanned: 0)
            return .request(request)
        }
        if bufferedByteCount >= head.contentLength {
            return completeBody(request, length: head.contentLength)
        }
        storage.reserveCapacity(start + head.contentLength)
        state = .body(request, length: head.contentLength)
        // The client waits for "100 Continue" before it sends the body; only now is it known to be welcome.
        return head.expectContinue ? .continueExpected : .needMoreData
    }

    private mutating func skipLeadingEmptyLines() {
        while start < storage.count {
            if storage[start] == 0x0A {
                start += 1
            } else if storage[start] == 0x0D && start + 1 < storage.count && storage[start + 1] == 0x0A {
                start += 2
            } else {
                break
            }
        }
        if start == storage.count { releaseConsumed() }
    }

    private mutating func completeBody(_ parsed: ParsedRequest, length: Int) -> Event {
        var parsed = parsed
        parsed.request.body = Array(storage[start..<start + length])
        start += length
        state = .head(lineStart: 0, scanned: 0)
        releaseConsumed()
        if storage.capacity > Self.keptCapacity {
            // Pipelined bytes behind a large body: keep only them, so the body is not held twice (here and
            // in the request) beyond what the server's body budget counted.
            storage = Array(storage[start...])
            start = 0
        }
        return .request(parsed)
    }

    /// Buffer capacity a connection keeps between requests; more was reserved for a large body.
    private static let keptCapacity = 256 * 1024

    /// Forgets consumed bytes once nothing else is buffered, and gives back the room a large body took.
    private mutating func releaseConsumed() {
        guard start == storage.count else { return }
        if storage.capacity > Self.keptCapacity {
            storage = []
        } else {
            storage.removeAll(keepingCapacity: true)
        }
        start = 0
    }

    private mutating func fail(_ error: HTTPRequestError) -> Event {
        state = .failed(error)
        return .failure(error)
    }

    // MARK: - Syntax

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A
    private static let space: UInt8 = 0x20
    private static let tab: UInt8 = 0x09

    /// Parses a complete head, from the request line to the empty line included.
    private static func parse(_ head: UnsafeBufferPointer<UInt8>) -> Result<Head, HTTPRequestError> {
        var lines = LineIterator(head)
        guard let requestLine = lines.next() else { return .failure(.badRequest("empty request")) }
        guard let sp1 = requestLine.firstIndex(of: space) else {
            return .failure(.badRequest("malformed request line"))
        }
        let method = UnsafeBufferPointer(rebasing: requestLine[..<sp1])
        let rest = requestLine[(sp1 + 1)...]
        guard let sp2 = rest.firstIndex(of: space) else { return .failure(.badRequest("malformed request line")) }
        let target = UnsafeBufferPointer(rebasing: rest[..<sp2])
        let version = UnsafeBufferPointer(rebasing: rest[(sp2 + 1)...])
        guard !method.isEmpty, method.allSatisfy(isTokenByte) else {
            return .failure(.badRequest("malformed request method"))
        }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.badRequest("malformed request target"))
        }
        let isHTTP10: Bool
        switch parseVersion(version) {
        case .http10: isHTTP10 = true
        case .http11: isHTTP10 = false
        case .unsupported: return .failure(.versionNotSupported)
        case .malformed: return .failure(.badRequest("malformed HTTP version"))
        }

        var result = Head(
            method: makeString(method), target: makeString(target), isHTTP10: isHTTP10, headers: [],
            contentLength: 0, keepAlive: !isHTTP10, expectContinue: false)
        result.headers.reserveCapacity(8)
        var contentLength: Int?
        var hostCount = 0
        var connectionClose = false
        var connectionKeepAlive = false
        while let line = lines.next() {
            if line.isEmpty { break }
            if line[line.startIndex] == space || line[line.startIndex] == tab {
                return .failure(.badRequest("obsolete header line folding is not accepted"))
            }
            guard let colon = line.firstIndex(of: 0x3A) else { return .failure(.badRequest("malformed header line")) }
            let nameBytes = UnsafeBufferPointer(rebasing: line[..<colon])
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(isTokenByte) else {
                return .failure(.badRequest("malformed header name"))
            }
            var valueStart = colon + 1
            var valueEnd = line.endIndex
            while valueStart < valueEnd && (line[valueStart] == space || line[valueStart] == tab) { valueStart += 1 }
            while valueEnd > valueStart && (line[valueEnd - 1] == space || line[valueEnd - 1] == tab) { valueEnd -= 1 }
            let valueBytes = UnsafeBufferPointer(rebasing: line[valueStart..<valueEnd])
            guard let value = makeFieldValue(valueBytes) else {
                return .failure(.badRequest("header values must be valid UTF-8 without control characters"))
            }
            let name = makeLowercasedString(nameBytes)
            switch name {
            case "content-length":
                guard let length = parseContentLength(value), contentLength == nil || contentLength == length else {
                    return .failure(.badRequest("invalid or conflicting Content-Length"))
                }
                contentLength = length
            case "transfer-encoding":
                return .failure(.lengthRequired)
            case "connection":
                forEachToken(value) { token in
                    if token.elementsEqual("close".utf8) { connectionClose = true }
                    if token.elementsEqual("keep-alive".utf8) { connectionKeepAlive = true }
                }
            case "expect":
                result.expectContinue = !isHTTP10 && value.lowercased() == "100-continue"
            case "host":
                hostCount += 1
                guard isValidHost(value.utf8) else { return .failure(.badRequest("malformed Host header")) }
            default:
                break
            }
            result.headers.append((name, value))
        }
        // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0 (which predates it, and which
        // health checkers such as HAProxy's default still send without one).
        guard hostCount <= 1 else { return .failure(.badRequest("more than one Host header")) }
        guard hostCount == 1 || isHTTP10 else {
            return .failure(.badRequest("an HTTP/1.1 request needs a Host header"))
        }
        if result.target.hasPrefix("/") {
            let path = result.target.prefix { $0 != "?" }
            guard HTTPRequest.pathSegments(of: path) != nil else {
                return .failure(.badRequest("the request path has malformed percent-encoding"))
            }
        }
        result.contentLength = contentLength ?? 0
        result.keepAlive = !connectionClose && (!isHTTP10 || connectionKeepAlive)
        return .success(result)
    }

    private enum Version { case http10, http11, unsupported, malformed }

    private static func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) -> Version {
        guard bytes.count == 8, bytes.starts(with: "HTTP/".utf8), bytes[6] == 0x2E,
              isDigit(bytes[5]), isDigit(bytes[7])
        else { return .malformed }
        switch (bytes[5], bytes[7]) {
        case (0x31, 0x31): return .http11
        case (0x31, 0x30): return .http10
        default: return .unsupported
        }
    }

    /// `1*DIGIT`, or a list of identical ones (`5, 5` is what some proxies produce). Saturates on overflow,
    /// which is over any body limit.
    private static func parseContentLength(_ value: String) -> Int? {
        var result: Int?
        var valid = true
        forEachToken(value) { token in
            guard !token.isEmpty, token.allSatisfy(isDigit) else { valid = false; return }
            var number = 0
            for digit in token {
                let (times, overflow1) = number.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times.addingReportingOverflow(Int(digit - 0x30))
                number = overflow1 || overflow2 ? Int.max : sum
            }
            if let result, result != number { valid = false }
            result = number
        }
        return valid ? result : nil
    }

    /// Calls `body` with each comma-separated element of `value`, trimmed and ASCII-lowercased.
    private static func forEachToken(_ value: String, _ body: ([UInt8]) -> Void) {
        for element in value.utf8.split(separator: 0x2C, omittingEmptySubsequences: false) {
            var token = Array(element.drop(while: { $0 == space || $0 == tab }))
            while let last = token.last, last == space || last == tab { token.removeLast() }
            for index in token.indices where token[index] >= 0x41 && token[index] <= 0x5A { token[index] += 0x20 }
            body(token)
        }
    }

    /// RFC 9110 §7.2 `Host = uri-host [ ":" port ]`: a reg-name (unreserved, sub-delims, `%`-escapes) or an
    /// IP literal in brackets, then an optional port. Empty is allowed (a target without an authority).
    private static func isValidHost(_ value: String.UTF8View) -> Bool {
        value.allSatisfy { byte in
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
            // - . _ ~ ! $ & ' ( ) * + , ; = % : [ ]
            case 0x2D, 0x2E, 0x5F, 0x7E, 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D,
                 0x25, 0x3A, 0x5B, 0x5D: true
            default: false
            }
        }
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// RFC 9110 `tchar`.
    @inline(__always)
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }

    /// Bytes already checked to be ASCII.
    private static func makeString(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    private static func makeLowercasedString(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { output in
            for index in 0..<bytes.count {
                let byte = bytes[index]
                output[index] = byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte
            }
            return bytes.count
        }
    }

    /// A field value: visible ASCII, spaces, tabs and valid UTF-8; `nil` for controls or invalid UTF-8.
    private static func makeFieldValue(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var ascii = true
        for byte in bytes {
            if byte >= 0x80 {
                ascii = false
            } else if (byte < 0x20 && byte != tab) || byte == 0x7F {
                return nil
            }
        }
        return ascii ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }
}

/// The lines of a head, each without its `LF` or `CRLF`. A bare `LF` ends a line too (RFC 9112 §2.2 allows it).
private struct LineIterator {
    private let buffer: UnsafeBufferPointer<UInt8>
    private var position: Int

    init(_ buffer: UnsafeBufferPointer<UInt8>) {
        self.buffer = buffer
        self.position = buffer.startIndex
    }

    mutating func next() -> Slice<UnsafeBufferPointer<UInt8>>? {
        guard position < buffer.endIndex else { return nil }
        var end = position
        while end < buffer.endIndex && buffer[end] != 0x0A { end += 1 }
        let next = min(end + 1, buffer.endIndex)
        if end > position && buffer[end - 1] == 0x0D { end -= 1 }
        defer { position = next }
        return buffer[position..<end]
    }
}
