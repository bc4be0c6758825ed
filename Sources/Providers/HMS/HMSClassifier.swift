import Classify
import Support

/// Turns one HMS Push Kit answer into an outcome per target of its request (SPEC §21). Pure: no I/O, no clock, no
/// logging; never traps on whatever the network returns.
///
/// ```swift
/// let reply = #"{"code":"80100000","msg":"{\"failure\":1,\"illegal_tokens\":[\"t2\"]}","requestId":"1"}"#
/// HMSClassifier.classify(status: 200, headers: [], body: Array(reply.utf8), targets: ["t1", "t2"], now: now)
///     .outcomes   // [.delivered(fcmMessageID: "1", canonicalToken: nil), .notRegistered]
/// ```
///
/// Huawei answers `{"code", "msg", "requestId"}` with `code` a string, and the code decides whatever the HTTP status
/// says; the status decides only when there is no code (a proxy's page, a 503 of flow control). The stored reason is
/// the code (`HMSCode`), else `HTTP <status>`.
public enum HMSClassifier {
    /// The answer's `{"code", "msg", "requestId"}`.
    public struct Reply: Sendable, Equatable {
        public var code: String?
        public var msg: String?
        public var requestID: String?
    }

    public static let headersRead = Classifier.headersRead

    /// `targets`: the request's tokens (or its one topic or condition) in the order of its deliveries.
    public static func classify(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], targets: [String], now: Int64
    ) -> Classification {
        let retryAfterUntil = RetryAfter.until(headers: headers, now: now)
        let reply = reply(body)
        let outcomes = outcomes(status: status, reply: reply, targets: targets)
        // Flow control (503) is counted per app in devices per second: every request meanwhile meets it too. An
        // undocumented 429 is taken as the same.
        return Classification(
            outcomes: outcomes, retryAfterUntil: retryAfterUntil,
            closesGate: status >= 500 || status == 429 || retryAfterUntil != nil)
    }

    // MARK: - The table

    static func outcomes(status: Int, reply: Reply?, targets: [String]) -> [Outcome] {
        func every(_ outcome: Outcome) -> [Outcome] { Array(repeating: outcome, count: targets.count) }
        guard let text = reply?.code else { return every(outcome(status: status)) }
        guard let code = HMSCode(rawValue: text) else {
            let reason = isCode(text) ? DeliveryReason(stored: text) : .unknownError
            // 801xxxxx are the message's parameter errors: no token of it can succeed.
            return every(text.hasPrefix("801") && isCode(text) ? .deadMessage(reason: reason) : .retry(reason: reason))
        }
        let reason = code.reason
        switch code {
        case .success:
            return every(.delivered(fcmMessageID: reply?.requestID, canonicalToken: nil))
        case .partialSuccess:
            let illegal = illegalTokens(reply?.msg)
            return targets.map {
                illegal.contains($0) ? .notRegistered : .delivered(fcmMessageID: reply?.requestID, canonicalToken: nil)
            }
        case .invalidParameter, .invalidMessageStructure, .ttlBeforeNow, .invalidCollapseKey, .messageTooBig,
            .invalidTokenCount, .highUrgencyNotAllowed:
            return every(.deadMessage(reason: reason))
        case .oauthAuthenticationError, .oauthTokenExpired:
            // Not an attempt: the credentials renew the token once (`AccessTokenCache`), a second refusal pauses.
            return every(.requeue(reason: reason))
        case .noPermission:
            return every(.pauseApp(reason: reason))
        case .allTokensInvalid:
            // Dead letters, the registry untouched: a wrong app_id (another app's tokens) answers this for every
            // token, and deleting them would empty the registry. Tokens are deleted only from a partial success,
            // whose delivered tokens prove the app's configuration right.
            return every(.deadToken(reason: reason))
        case .oauthServerError, .internalError:
            return every(.retry(reason: reason))
        }
    }

    /// An answer without Huawei's code.
    private static func outcome(status: Int) -> Outcome {
        switch status {
        case 200: .retry(reason: .invalidResponse)
        case 400: .deadMessage(reason: .httpStatus(400))
        case 401: .requeue(reason: .httpStatus(401))
        case 403: .pauseApp(reason: .httpStatus(403))
        default: .retry(reason: .httpStatus(status))
        }
    }

    /// Reads `{"code", "msg", "requestId"}`; nil when the body is not a JSON object. A numeric `code` is read as its
    /// digits.
    public static func reply(_ body: [UInt8]) -> Reply? {
        guard let json = try? JSON.parse(body), json.objectValue != nil else { return nil }
        var code = json["code"]?.stringValue
        if code == nil, let number = json["code"]?.int64Value { code = String(number) }
        let requestID = json["requestId"]?.stringValue.flatMap { $0.isEmpty || $0.utf8.count > 256 ? nil : $0 }
        return Reply(code: code, msg: json["msg"]?.stringValue, requestID: requestID)
    }

    /// The refused tokens a partial success names: `msg` is a JSON string, `{"success", "failure",
    /// "illegal_tokens": [...]}`; HarmonyOS's later API writes `"illegalTokens": {"<why>": [...]}`, read too.
    static func illegalTokens(_ msg: String?) -> Set<String> {
        guard let msg, let json = try? JSON.parse(Array(msg.utf8)) else { return [] }
        var tokens: Set<String> = []
        for key in ["illegal_tokens", "illegalTokens"] {
            switch json[key] {
            case .array(let items)?: tokens.formUnion(items.compactMap(\.stringValue))
            case .object(let groups)?:
                for group in groups { tokens.formUnion((group.value.arrayValue ?? []).compactMap(\.stringValue)) }
            default: break
            }
        }
        return tokens
    }

    /// A code as Huawei writes them: digits, a few of them.
    private static func isCode(_ text: String) -> Bool {
        (1...16).contains(text.utf8.count) && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }
}
