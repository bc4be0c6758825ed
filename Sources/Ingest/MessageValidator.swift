import OAuth
import Queue
import Support

/// Checks an incoming FCM legacy message (SPEC §3) and extracts what Herald acts on. A body or batch item with a
/// `message` member is an FCM HTTP v1 request instead, checked by `V1MessageValidator` (SPEC §13).
///
/// Rules apply in a fixed order so the same input always gets the same error:
/// 1. JSON object (`InvalidJson`); 2. known top-level fields only (`InvalidParameters`);
/// 3. exactly one non-empty, well-formed target (`MissingRegistration`, `InvalidParameters`);
/// 4. `app`, `send_at` and options of the right type and value (`InvalidParameters`); 5. `time_to_live` (`InvalidTtl`);
/// 6. `data` keys (`InvalidDataKey`); 7. `data` + `notification` size (`MessageTooBig`).
///
/// ```swift
/// let result = MessageValidator.validate(body: Array(#"{"to":"tok","data":{"a":"1"}}"#.utf8))
/// // .success(IncomingMessage(target: .tokens(["tok"]), payload: ["data": ["a": "1"]], ...))
/// ```
public enum MessageValidator {
    public static let defaultApp = "default"
    public static let maximumTTL = 2_419_200
    /// Bytes of compact `data` plus `notification` JSON.
    public static let payloadLimit = 4096
    public static let topicPayloadLimit = 2048

    /// - Parameter now: Unix milliseconds, what `send_at` is checked against (at most 30 days ahead).
    public static func validate(
        body: some Collection<UInt8>, now: Int64 = Clock.nowMillis()
    ) -> Result<IncomingMessage, APIError> {
        Result { () throws(APIError) in try check(parseObject(body), now: now) }
    }

    /// Validates one message already parsed, e.g. an item of a batch.
    public static func validate(object: JSON, now: Int64 = Clock.nowMillis()) -> Result<IncomingMessage, APIError> {
        Result { () throws(APIError) in try check(object, now: now) }
    }

    /// `{"messages": [ ... ]}` → one result per item, in order; a body that is not that shape is one APIError.
    public static func validateBatch(
        body: some Collection<UInt8>, now: Int64 = Clock.nowMillis()
    ) -> Result<[Result<IncomingMessage, APIError>], APIError> {
        Result { () throws(APIError) in
            let batch = try parseObject(body)
            for member in batch.objectValue ?? [] where !sameBytes(member.key, "messages") {
                throw .invalidParameters("unknown batch field \(quoted(member.key)); a batch is {\"messages\": [...]}")
            }
            guard let messages = batch["messages"] else {
                throw .invalidParameters("a batch is {\"messages\": [...]}; \"messages\" is missing")
            }
            guard let items = messages.arrayValue else {
                throw .invalidParameters("\"messages\" must be an array of messages")
            }
            guard !items.isEmpty else { throw .invalidParameters("\"messages\" must hold at least one message") }
            return items.map { validate(object: $0, now: now) }
        }
    }

    // MARK: - Rules

    private static let targetFields = ["to", "registration_ids", "condition", "users", "subscription"]
    private static let knownFields = targetFields + [
        "app", "collapse_key", "priority", "content_available", "mutable_content", "delay_while_idle",
        "time_to_live", "restricted_package_name", "dry_run", "data", "notification", "send_at",
    ]
    /// Herald's own fields besides the target: they are not part of the message sent.
    private static let heraldFields = ["app", "send_at"]

    /// Rule 1 for a whole body.
    private static func parseObject(_ body: some Collection<UInt8>) throws(APIError) -> JSON {
        let value: JSON
        do {
            value = try JSON.parse(body)
        } catch {
            throw .invalidJSON("the body is not valid JSON: \(error)")
        }
        guard case .object = value else { throw .invalidJSON("the body must be a JSON object") }
        return value
    }

    private static func check(_ message: JSON, now: Int64) throws(APIError) -> IncomingMessage {
        // 1
        guard case .object(let members) = message else { throw .invalidJSON("a message must be a JSON object") }
        // An FCM HTTP v1 request (SPEC §13): `{"message": {...}}`, which legacy has no field for.
        if V1MessageValidator.isV1(message) {
            return try V1MessageValidator.validate(object: message, heraldFields: true, now: now).get()
        }
        // 2
        for member in members where !knownFields.contains(where: { sameBytes($0, member.key) }) {
            throw .invalidParameters("unknown field \(quoted(member.key))")
        }
        // 3
        let target = try checkTarget(message)
        // 4
        // A message to users that names no app reaches them in every app (SPEC §17).
        let app = message["app"] == nil && message["users"] != nil
            ? NewMessage.everyApp : try checkApp(message["app"])
        for field in ["collapse_key", "restricted_package_name"] {
            if let value = message[field], value.stringValue == nil {
                throw .invalidParameters("\(field) must be a string")
            }
        }
        if let collapseKey = message["collapse_key"]?.stringValue, breaksHeader(collapseKey) {
            // It becomes APNs' `apns-collapse-id` and Web Push's `Topic`.
            throw .invalidParameters("collapse_key may not contain CR, LF or NUL")
        }
        for field in ["content_available", "mutable_content", "delay_while_idle", "dry_run"] {
            if let value = message[field], value.boolValue == nil {
                throw .invalidParameters("\(field) must be true or false")
            }
        }
        for field in ["data", "notification"] {
            if let value = message[field], value.objectValue == nil {
                throw .invalidParameters("\(field) must be a JSON object")
            }
        }
        let priority = try checkPriority(message["priority"])
        let sendAt = try checkSendAt(message["send_at"], now: now)
        // 5
        let ttl = try checkTTL(message["time_to_live"])
        // 6
        for key in message["data"]?.objectValue?.map(\.key) ?? [] where isReservedDataKey(key) {
            throw .invalidDataKey("data key \(quoted(key)) is reserved: no from, message_type, google* or gcm*")
        }
        // 7
        try checkSize(message, target: target)

        return IncomingMessage(
            app: app,
            target: target,
            payload: .object(members.filter { member in
                !(heraldFields + targetFields).contains(where: { sameBytes($0, member.key) })
            }),
            collapseKey: message["collapse_key"]?.stringValue,
            priority: priority,
            ttlSeconds: ttl,
            dryRun: message["dry_run"]?.boolValue ?? false,
            sendAt: sendAt
        )
    }

    private static func checkTarget(_ message: JSON) throws(APIError) -> MessageTarget {
        let present = targetFields.filter { message[$0] != nil }
        guard let field = present.first, let value = message[field] else {
            throw .missingRegistration(
                "the message has no target: give to, registration_ids, condition, users or subscription")
        }
        guard present.count == 1 else {
            throw .invalidParameters("give only one of to, registration_ids, condition, users, subscription; got "
                + present.joined(separator: " and "))
        }
        switch field {
        case "to":
            guard let to = value.stringValue else { throw .invalidParameters("to must be a string") }
            guard !to.isEmpty else { throw .missingRegistration("to is empty") }
            let topicPrefix = "/topics/".utf8
            guard to.utf8.starts(with: topicPrefix) else { return .tokens([to]) }
            guard TopicCondition.isTopicName(to.utf8.dropFirst(topicPrefix.count)) else {
                throw .invalidParameters("topic names in to must be /topics/ then 1 or more of [a-zA-Z0-9-_.~%]")
            }
            return .topic(to)
        case "condition":
            guard let condition = value.stringValue else { throw .invalidParameters("condition must be a string") }
            guard !condition.isEmpty else { throw .missingRegistration("condition is empty") }
            if let problem = TopicCondition.problem(in: condition) { throw .invalidParameters(problem) }
            return .condition(condition)
        case "registration_ids":
            return .tokens(try checkIdentifiers(value, field: field))
        case "subscription":
            return .tokens([try subscriptionToken(value, error: APIError.invalidParameters)])
        default:
            return .users(try checkIdentifiers(value, field: field))
        }
    }

    /// A Web Push subscription (`PushSubscription.toJSON()`) as the token the registry keeps it as (SPEC §16).
    static func subscriptionToken(_ value: JSON, error refusal: (String) -> APIError) throws(APIError) -> String {
        do {
            return try WebPushSubscription(json: value).token
        } catch {
            throw refusal(error.description)
        }
    }

    /// A non-empty array of non-empty strings, deduplicated by bytes, first occurrence kept. `error` makes the
    /// refusal (v1 messages refuse everything as `InvalidArgument`).
    static func checkIdentifiers(
        _ value: JSON, field: String, error: ((String) -> APIError)? = nil
    ) throws(APIError) -> [String] {
        guard let items = value.arrayValue else {
            throw (error ?? APIError.invalidParameters)("\(field) must be an array of strings")
        }
        guard !items.isEmpty else { throw (error ?? APIError.missingRegistration)("\(field) is empty") }
        var seen = Set<ExactString>(minimumCapacity: items.count)
        var identifiers: [String] = []
        identifiers.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard let identifier = item.stringValue, !identifier.isEmpty else {
                throw (error ?? APIError.invalidParameters)("\(field)[\(index)] must be a non-empty string")
            }
            if seen.insert(ExactString(identifier)).inserted { identifiers.append(identifier) }
        }
        return identifiers
    }

    private static func checkApp(_ value: JSON?) throws(APIError) -> String {
        guard let value else { return defaultApp }
        guard let app = value.stringValue, isValidAppName(app) else {
            throw .invalidParameters("app must be a string of 1 to 100 characters from [A-Za-z0-9._-]")
        }
        return app
    }

    /// 1...100 characters of `[A-Za-z0-9._-]`: the `app` field, and the `X-Herald-App` header of `/fcm/send`.
    static func isValidAppName(_ app: String) -> Bool {
        (1...100).contains(app.utf8.count) && app.utf8.allSatisfy(isAppByte)
    }

    private static func isAppByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    private static func checkPriority(_ value: JSON?) throws(APIError) -> Priority {
        guard let value else { return .normal }
        guard let priority = value.stringValue, sameBytes(priority, "normal") || sameBytes(priority, "high") else {
            throw .invalidParameters("priority must be \"normal\" or \"high\"")
        }
        return sameBytes(priority, "high") ? .high : .normal
    }

    private static func checkSendAt(_ value: JSON?, now: Int64) throws(APIError) -> Int64? {
        guard let value else { return nil }
        do {
            return try SendAt.read(value, now: now)
        } catch {
            throw .invalidParameters("send_at \(error.reason)")
        }
    }

    private static func checkTTL(_ value: JSON?) throws(APIError) -> Int {
        guard let value else { return maximumTTL }
        guard let seconds = value.int64Value, (0...Int64(maximumTTL)).contains(seconds) else {
            throw .invalidTtl("time_to_live must be an integer number of seconds in 0...\(maximumTTL), "
                + "written without fraction or exponent")
        }
        return Int(seconds)
    }

    /// Whether `value` would break an HTTP header it is sent in (CR, LF or NUL), which no header value of a message
    /// may (SPEC §19).
    static func breaksHeader(_ value: String) -> Bool {
        value.utf8.contains { $0 == 0 || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
    }

    /// FCM reserves these exactly as written, byte for byte: `from`, `message_type`, and prefixes `google`, `gcm`.
    static func isReservedDataKey(_ key: String) -> Bool {
        sameBytes(key, "from") || sameBytes(key, "message_type")
            || key.utf8.starts(with: "google".utf8) || key.utf8.starts(with: "gcm".utf8)
    }

    private static func checkSize(_ message: JSON, target: MessageTarget) throws(APIError) {
        var encoded: [UInt8] = []
        message["data"]?.append(to: &encoded)
        message["notification"]?.append(to: &encoded)
        let limit = target.isTopicOrCondition ? topicPayloadLimit : payloadLimit
        guard encoded.count <= limit else {
            let kind = target.isTopicOrCondition ? "topic and condition messages" : "messages to devices"
            throw .messageTooBig("data and notification take \(encoded.count) bytes as compact JSON; "
                + "the limit for \(kind) is \(limit)")
        }
    }

    // MARK: - Helpers

    /// A field name or key for an error message, quoted and cut short.
    private static func quoted(_ text: String) -> String {
        var result = ""
        appendJSONString(text.utf8.count > 64 ? String(text.prefix(60)) + "…" : text, to: &result)
        return result
    }
}

/// Identifiers and field names are compared by bytes, as the database and FCM compare them, not by Swift's
/// canonical equivalence.
private func sameBytes(_ left: String, _ right: String) -> Bool {
    left.utf8.count == right.utf8.count && left.utf8.elementsEqual(right.utf8)
}

private struct ExactString: Hashable {
    let string: String
    init(_ string: String) { self.string = string }

    static func == (lhs: ExactString, rhs: ExactString) -> Bool { sameBytes(lhs.string, rhs.string) }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil { for byte in string.utf8 { hasher.combine(byte) } }
    }
}
