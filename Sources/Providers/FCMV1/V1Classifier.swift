import Classify
import Support

/// Turns one FCM HTTP v1 answer (one token, topic or condition per request) into its outcome (SPEC §12). Pure: no
/// I/O, no clock, no logging; never traps on whatever the network returns.
///
/// ```swift
/// let classification = V1Classifier.classify(status: 404, headers: [], body: Array(reply.utf8), now: now,
///                                            mayRenewCredentials: true)
/// // classification.outcomes == [.notRegistered]
/// ```
///
/// The reason is the provider's `errorCode` (from `error.details[].errorCode`), else `error.status`, else
/// `HTTP <status>`. The code decides the outcome; the HTTP status decides only for codes the table does not know.
public enum V1Classifier {
    /// The `error` object of a v1 error answer, as far as the classifier reads it.
    public struct ErrorReply: Sendable, Equatable {
        /// `error.details[].errorCode` of the `google.firebase.fcm.v1.FcmError` detail (else any detail's).
        public var errorCode: String?
        /// `error.status`, the canonical gRPC code name (`NOT_FOUND`, `INVALID_ARGUMENT`, …).
        public var status: String?
        /// The error names the registration token: a `google.rpc.BadRequest` field violation on `message.token`,
        /// or a message about the registration token.
        public var namesToken: Bool

        public var code: String? { errorCode ?? status }
    }

    public static func classify(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], now: Int64, mayRenewCredentials: Bool
    ) -> Classification {
        let retryAfterUntil = RetryAfter.until(headers: headers, now: now)
        let outcome = outcome(status: status, body: body, mayRenewCredentials: mayRenewCredentials)
        // A quota error closes the gate even without Retry-After: FCM asks for a minute's wait, and every other
        // request would meet the same quota meanwhile.
        let quota = if case .retrySlow = outcome { true } else { false }
        return Classification(
            outcomes: [outcome], retryAfterUntil: retryAfterUntil,
            closesGate: status >= 500 || retryAfterUntil != nil || quota)
    }

    /// Timeout, reset, DNS or connect failure: retry, and the gate closes like a 5xx.
    public static func transportFailure(reason: DeliveryReason) -> Classification {
        Classifier.transportFailure(reason: reason, targetCount: 1)
    }

    // MARK: - The table

    static func outcome(status: Int, body: [UInt8], mayRenewCredentials: Bool) -> Outcome {
        if status == 200 { return delivered(body) }
        let reply = errorReply(body)
        let code = reply?.code.flatMap { Outcome.isIdentifier($0) ? DeliveryReason(stored: $0) : nil }
        let reason = code ?? (reply?.code == nil ? .httpStatus(status) : .unknownError)
        switch reply?.code.flatMap(V1Code.init(rawValue:)) {
        case .unregistered?:
            return .notRegistered
        case .senderIDMismatch?:
            return .deadToken(reason: reason)
        case .invalidArgument?:
            return reply?.namesToken == true ? .deadToken(reason: reason) : .deadMessage(reason: reason)
        case .quotaExceeded?, .resourceExhausted?:
            // FCM asks for at least a minute before retrying a quota error: the slow lane.
            return .retrySlow(reason: reason)
        case .unavailable?, .internal?, .unspecifiedError?, .deadlineExceeded?, .aborted?:
            return .retry(reason: reason)
        case .thirdPartyAuthError?, .apnsAuthError?, .permissionDenied?:
            return .pauseApp(reason: reason)
        case .unauthenticated?:
            return unauthenticated(mayRenewCredentials)
        case nil:
            break
        }
        switch status {
        case 400: return .deadMessage(reason: code ?? .v1(.invalidArgument))
        case 401: return code == nil ? unauthenticated(mayRenewCredentials) : .pauseApp(reason: reason)
        case 403: return .pauseApp(reason: code ?? .v1(.permissionDenied))
        case 429: return .retrySlow(reason: code ?? .v1(.quotaExceeded))
        default: return .retry(reason: reason)
        }
    }

    private static func unauthenticated(_ mayRenewCredentials: Bool) -> Outcome {
        let reason = DeliveryReason.v1(.unauthenticated)
        return mayRenewCredentials ? .requeue(reason: reason) : .pauseApp(reason: reason)
    }

    /// `{"name": "projects/p/messages/123"}`; anything else is not FCM's answer and is retried.
    private static func delivered(_ body: [UInt8]) -> Outcome {
        let plainName = body.withUnsafeBufferPointer { plainNameReply($0) }
        guard let name = plainName ?? {
            guard let reply = try? JSON.parse(body), case .string(let name)? = reply["name"] else { return nil }
            return name
        }(), !name.isEmpty, name.utf8.count <= 512
        else { return .retry(reason: .invalidResponse) }
        return .delivered(fcmMessageID: name, canonicalToken: nil)
    }

    /// The name of a reply that is exactly `{"name": "…"}` (whitespace allowed) with no escape in the name: every
    /// success FCM sends, read without building a JSON tree, since there is one per send. Nil for anything else,
    /// which the full parser then reads.
    static func plainNameReply(_ body: UnsafeBufferPointer<UInt8>) -> String? {
        var index = 0
        func skipWhitespace() {
            while index < body.count, [0x20, 0x09, 0x0A, 0x0D].contains(body[index]) { index += 1 }
        }
        func take(_ expected: StaticString) -> Bool {
            let bytes = UnsafeBufferPointer(start: expected.utf8Start, count: expected.utf8CodeUnitCount)
            guard body.count - index >= bytes.count, body[index..<(index + bytes.count)].elementsEqual(bytes) else {
                return false
            }
            index += bytes.count
            return true
        }
        skipWhitespace()
        guard take("{") else { return nil }
        skipWhitespace()
        guard take(#""name""#) else { return nil }
        skipWhitespace()
        guard take(":") else { return nil }
        skipWhitespace()
        guard take("\"") else { return nil }
        let start = index
        while index < body.count, body[index] != UInt8(ascii: "\""), body[index] != UInt8(ascii: "\\"),
              body[index] >= 0x20 {
            index += 1
        }
        let end = index
        guard take("\"") else { return nil }
        skipWhitespace()
        guard take("}") else { return nil }
        skipWhitespace()
        guard index == body.count else { return nil }
        // Not UTF-8: the full parser refuses it.
        return String(validating: UnsafeBufferPointer(rebasing: body[start..<end]), as: UTF8.self)
    }

    /// Reads `{"error": {"code", "message", "status", "details": [...]}}`; nil when the body is not that shape.
    public static func errorReply(_ body: [UInt8]) -> ErrorReply? {
        guard let reply = try? JSON.parse(body), let error = reply["error"], error.objectValue != nil else {
            return nil
        }
        var result = ErrorReply(errorCode: nil, status: error["status"]?.stringValue, namesToken: false)
        var anyErrorCode: String?
        for detail in error["details"]?.arrayValue ?? [] {
            let type = detail["@type"]?.stringValue ?? ""
            if let code = detail["errorCode"]?.stringValue {
                if type.hasSuffix("google.firebase.fcm.v1.FcmError") { result.errorCode = result.errorCode ?? code }
                anyErrorCode = anyErrorCode ?? code
            }
            for violation in detail["fieldViolations"]?.arrayValue ?? []
            where violation["field"]?.stringValue == "message.token" {
                result.namesToken = true
            }
        }
        result.errorCode = result.errorCode ?? anyErrorCode
        if let message = error["message"]?.stringValue, message.lowercased().contains("registration token") {
            result.namesToken = true
        }
        return result
    }
}
