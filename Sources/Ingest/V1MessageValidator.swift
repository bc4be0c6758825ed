import OAuth
import Queue
import Support

/// Checks an FCM HTTP v1 request — `{"message": {...}, "validate_only": bool}` — as FCM v1 does (SPEC §13), and
/// extracts what Herald acts on. Used by `POST /v1/messages` (with Herald's `app`, `tokens` and `users` beside
/// `message`), its batch items, and the drop-in `POST /v1/projects/{project}/messages:send` (FCM's fields only).
///
/// Every refusal is a 400 with code `InvalidArgument` and a message in FCM's own wording that names the field, so
/// the drop-in endpoint can answer `INVALID_ARGUMENT` and the Admin SDKs raise `InvalidArgumentError`.
///
/// Unknown fields are refused in the request, the message, and each platform block (`android`, `apns`, `webpush`,
/// their `notification`s and `fcm_options`), where a typo would otherwise be dropped silently on its way to FCM.
/// Blocks whose members are open-ended by design (`data`, `apns.payload`) are checked for their value types only.
/// Headers are not (SPEC §19, what a message may set): `apns.headers` takes Apple's `apns-*` request headers alone,
/// `webpush.headers` `TTL`, `Urgency` and `Topic`, and no header value anywhere may hold CR, LF or NUL.
///
/// ```swift
/// let result = V1MessageValidator.validate(
///     object: try JSON.parse(Array(#"{"message":{"token":"t","android":{"ttl":"60s"}}}"#.utf8)), heraldFields: false)
/// // .success(IncomingMessage(target: .tokens(["t"]), format: .v1, payload: {"android":{"ttl":"60s"}},
/// //                          ttlSeconds: 60, ...))
/// ```
public enum V1MessageValidator {
    /// Whether a request body or batch item is v1-shaped: it has a `message` member.
    public static func isV1(_ object: JSON) -> Bool {
        object["message"] != nil
    }

    /// - Parameters:
    ///   - heraldFields: allow Herald's `app`, `tokens`, `users` and `subscription` beside `message`
    ///     (`POST /v1/messages`); the drop-in endpoint takes FCM's request and `send_at`.
    ///   - now: Unix milliseconds, to turn an absolute `apns-expiration` into a TTL and to check `send_at`.
    public static func validate(
        object: JSON, heraldFields: Bool, now: Int64 = Clock.nowMillis()
    ) -> Result<IncomingMessage, APIError> {
        Result { () throws(APIError) in try check(object, heraldFields: heraldFields, now: now) }
    }

    // MARK: - Rules

    static let deviceTargets = ["token", "fid"]
    static let messageTargets = deviceTargets + ["topic", "condition"]
    private static let messageFields = messageTargets + [
        "name", "data", "notification", "android", "apns", "webpush", "fcm_options",
    ]
    private static let notificationFields = ["title", "body", "image"]
    private static let androidFields = [
        "collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification", "fcm_options",
        "direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok",
    ]
    private static let androidNotificationFields = [
        "title", "body", "icon", "color", "sound", "tag", "click_action", "body_loc_key", "body_loc_args",
        "title_loc_key", "title_loc_args", "channel_id", "ticker", "sticky", "event_time", "local_only",
        "notification_priority", "default_sound", "default_vibrate_timings", "default_light_settings",
        "vibrate_timings", "visibility", "notification_count", "light_settings", "image", "bypass_proxy_notification",
        "proxy",
    ]
    private static let androidStrings = ["collapse_key", "restricted_package_name"]
    private static let androidFlags = ["direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok"]
    private static let androidPriorities = ["NORMAL", "HIGH", "normal", "high"]
    private static let androidNotificationStrings = [
        "title", "body", "icon", "color", "sound", "tag", "click_action", "body_loc_key", "title_loc_key",
        "channel_id", "ticker", "image",
    ]
    private static let apnsFields = ["headers", "payload", "fcm_options", "live_activity_token"]
    /// Apple's request headers ("Sending notification requests to APNs"), less `authorization`, which is Herald's.
    private static let apnsHeaders = [
        "apns-id", "apns-push-type", "apns-expiration", "apns-priority", "apns-topic", "apns-collapse-id",
    ]
    /// RFC 8030's; the rest of a push request is Herald's (encryption, VAPID).
    private static let webpushHeaders = ["TTL", "Urgency", "Topic"]
    private static let urgencies = ["very-low", "low", "normal", "high"]
    private static let apnsStrings = ["live_activity_token"]
    private static let fanOuts = ["tokens", "users", "subscription"]
    /// FCM's request, and Herald's `send_at`, which the drop-in endpoint takes too (SPEC §23).
    private static let fcmTopLevel = ["message", "validate_only", "send_at"]
    private static let heraldTopLevel = fcmTopLevel + fanOuts + ["app"]
    private static let webpushFields = ["headers", "data", "notification", "fcm_options"]
    private static let optionsFields = ["analytics_label", "link", "image"]

    private static func check(_ given: JSON, heraldFields: Bool, now: Int64) throws(APIError) -> IncomingMessage {
        guard given.objectValue != nil else {
            throw invalid("Invalid JSON payload received. The request must be a JSON object.")
        }
        let request = snakeCased(given)
        let members = request.objectValue ?? []
        let topLevel = heraldFields ? heraldTopLevel : fcmTopLevel
        for member in members where !topLevel.contains(member.key) {
            throw invalid("Invalid JSON payload received. Unknown name \(quoted(member.key)): Cannot find field.")
        }
        guard let message = request["message"], let fields = message.objectValue else {
            throw invalid("Invalid value at 'message': must be a JSON object.")
        }
        for field in fields where !messageFields.contains(field.key) {
            throw invalid("Invalid JSON payload received. Unknown name \(quoted(field.key)) at 'message': "
                + "Cannot find field.")
        }
        var dryRun = false
        if let value = request["validate_only"] {
            guard let flag = value.boolValue else {
                throw invalid("Invalid value at 'validate_only' (TYPE_BOOL), \(value.serialized())")
            }
            dryRun = flag
        }
        var sendAt: Int64?
        if let value = request["send_at"] {
            do {
                sendAt = try SendAt.read(value, now: now)
            } catch {
                throw invalid("Invalid value at 'send_at': \(error.reason).")
            }
        }
        let (target, tokenField) = try checkTarget(request, message: message)
        // A message to users that names no app reaches them in every app (SPEC §17).
        var app = request["users"] != nil ? NewMessage.everyApp : MessageValidator.defaultApp
        if let value = request["app"] {
            guard let name = value.stringValue, MessageValidator.isValidAppName(name) else {
                throw invalid("Invalid value at 'app': a string of 1 to 100 characters from [A-Za-z0-9._-].")
            }
            app = name
        }
        if let name = message["name"], name.stringValue == nil {
            throw invalid("Invalid value at 'message.name' (TYPE_STRING), \(name.serialized())")
        }
        try checkStringMap(message["data"], at: "message.data", dataKeys: true)
        try checkObject(message["notification"], at: "message.notification", fields: notificationFields,
                        strings: notificationFields)
        try checkObject(message["fcm_options"], at: "message.fcm_options", fields: optionsFields,
                        strings: optionsFields)
        let android = try checkAndroid(message["android"])
        // An absolute `apns-expiration` leaves the TTL it names after the message's first chance to be sent.
        let apns = try checkAPNs(message["apns"], now: max(now, sendAt ?? now))
        let webpush = try checkWebpush(message["webpush"])
        try checkSize(message, target: target)

        let ttl = android.ttl ?? apns.ttl ?? webpush.ttl ?? MessageValidator.maximumTTL
        let priority = android.priority ?? apns.priority ?? webpush.priority ?? .normal
        return IncomingMessage(
            app: app, target: target, tokenField: tokenField, format: .v1,
            payload: .object(fields.filter { !messageTargets.contains($0.key) }),
            collapseKey: android.collapseKey ?? apns.collapseKey, priority: priority, ttlSeconds: ttl, dryRun: dryRun,
            sendAt: sendAt)
    }

    /// Exactly one of the message's `token`, `fid`, `topic`, `condition` and Herald's `tokens`, `users`.
    private static func checkTarget(
        _ request: JSON, message: JSON
    ) throws(APIError) -> (MessageTarget, TokenField) {
        let inMessage = messageTargets.filter { message[$0] != nil }
        let beside = fanOuts.filter { request[$0] != nil }
        guard inMessage.count + beside.count == 1 else {
            try refuseTargets(inMessage: inMessage, beside: beside)
        }
        if beside.first == "subscription" {
            return (.tokens([try MessageValidator.subscriptionToken(request["subscription"] ?? .null, error: {
                invalid("Invalid value at 'subscription': \($0).")
            })]), .token)
        }
        if let field = beside.first {
            let identifiers = try MessageValidator.checkIdentifiers(
                request[field] ?? .null, field: field, error: invalid)
            return (field == "tokens" ? .tokens(identifiers) : .users(identifiers), .token)
        }
        let field = inMessage[0]
        guard let value = message[field]?.stringValue, !value.isEmpty else {
            throw invalid("Invalid value at 'message.\(field)': must be a non-empty string.")
        }
        switch field {
        case "token": return (.tokens([value]), .token)
        case "fid": return (.tokens([value]), .fid)
        case "topic":
            // FCM takes the name with or without `/topics/`; Herald stores targets as legacy writes them.
            let prefix = "/topics/"
            let name = value.hasPrefix(prefix) ? String(value.dropFirst(prefix.count)) : value
            guard TopicCondition.isTopicName(name.utf8) else {
                throw invalid("Invalid value at 'message.topic': a topic name is 1 or more of [a-zA-Z0-9-_.~%].")
            }
            return (.topic(prefix + name), .token)
        default:
            if let problem = TopicCondition.problem(in: value, maximumOperators: TopicCondition.maximumV1Operators) {
                throw invalid("Invalid value at 'message.condition': \(problem).")
            }
            return (.condition(value), .token)
        }
    }

    /// None, or more than one, target: the refusal names what was given.
    private static func refuseTargets(inMessage: [String], beside: [String]) throws(APIError) -> Never {
        let present = inMessage.map { "message." + $0 } + beside
        guard !present.isEmpty else {
            throw invalid("Recipient of the message is not set: give message.token, message.fid, message.topic or "
                + "message.condition.")
        }
        throw invalid("Exactly one of message.token, message.fid, message.topic, message.condition, tokens, "
            + "users or subscription must be given; got " + present.joined(separator: " and ") + ".")
    }

    // MARK: - Platform blocks

    private struct Derived {
        var ttl: Int?
        var priority: Priority?
        var collapseKey: String?
    }

    private static func checkAndroid(_ value: JSON?) throws(APIError) -> Derived {
        guard let value else { return Derived() }
        try checkObject(value, at: "message.android", fields: androidFields,
                        strings: androidStrings)
        for flag in androidFlags {
            if let member = value[flag], member.boolValue == nil {
                throw invalid("Invalid value at 'message.android.\(flag)' (TYPE_BOOL), \(member.serialized())")
            }
        }
        var derived = Derived(collapseKey: value["collapse_key"]?.stringValue)
        if let collapseKey = derived.collapseKey, MessageValidator.breaksHeader(collapseKey) {
            // It becomes APNs' `apns-collapse-id` and Web Push's `Topic`.
            throw invalid("Invalid value at 'message.android.collapse_key': it may not contain CR, LF or NUL.")
        }
        if let ttl = value["ttl"] {
            guard let seconds = ttl.stringValue.flatMap(durationSeconds), seconds <= MessageValidator.maximumTTL else {
                throw invalid("Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), "
                    + "\(ttl.serialized()): a duration such as \"3600s\" or \"3.5s\" of at most "
                    + "\(MessageValidator.maximumTTL)s (4 weeks).")
            }
            derived.ttl = seconds
        }
        if let priority = value["priority"] {
            // The SDKs write the enum in lower case (firebase-admin: "high"); FCM's JSON reader takes either.
            guard let text = priority.stringValue, androidPriorities.contains(text) else {
                throw invalid("Invalid value at 'message.android.priority' "
                    + "(type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), "
                    + "\(priority.serialized()): NORMAL or HIGH.")
            }
            derived.priority = text == "HIGH" || text == "high" ? .high : .normal
        }
        try checkStringMap(value["data"], at: "message.android.data", dataKeys: true)
        try checkObject(value["notification"], at: "message.android.notification", fields: androidNotificationFields,
                        strings: androidNotificationStrings)
        try checkObject(value["fcm_options"], at: "message.android.fcm_options", fields: optionsFields,
                        strings: optionsFields)
        return derived
    }

    private static func checkAPNs(_ value: JSON?, now: Int64) throws(APIError) -> Derived {
        guard let value else { return Derived() }
        try checkObject(value, at: "message.apns", fields: apnsFields, strings: apnsStrings)
        try checkStringMap(value["headers"], at: "message.apns.headers", dataKeys: false)
        let headers = try checkHeaders(value["headers"], at: "message.apns.headers", allowed: apnsHeaders)
        if let payload = value["payload"], payload.objectValue == nil {
            throw invalid("Invalid value at 'message.apns.payload' (type.googleapis.com/google.protobuf.Struct), "
                + "\(payload.serialized()): must be a JSON object.")
        }
        try checkObject(value["fcm_options"], at: "message.apns.fcm_options", fields: optionsFields,
                        strings: optionsFields)
        var derived = Derived(collapseKey: headers["apns-collapse-id"])
        if let expiration = headers["apns-expiration"] {
            guard let epoch = Int64(expiration), epoch >= 0 else {
                throw invalid("Invalid value at 'message.apns.headers.apns-expiration': a UNIX time in seconds, "
                    + "got \(quoted(expiration)).")
            }
            // APNs reads 0 as "now or never", as a TTL of 0 is for Herald.
            derived.ttl = epoch == 0 ? 0 : Int(min(max(0, epoch - now / 1000), Int64(MessageValidator.maximumTTL)))
        }
        if let priority = headers["apns-priority"] {
            guard ["10", "5", "1"].contains(priority) else {
                throw invalid("Invalid value at 'message.apns.headers.apns-priority': 10, 5 or 1, "
                    + "got \(quoted(priority)).")
            }
            derived.priority = priority == "10" ? .high : .normal
        }
        return derived
    }

    private static func checkWebpush(_ value: JSON?) throws(APIError) -> Derived {
        guard let value else { return Derived() }
        try checkObject(value, at: "message.webpush", fields: webpushFields, strings: [])
        try checkStringMap(value["headers"], at: "message.webpush.headers", dataKeys: false)
        let headers = try checkHeaders(value["headers"], at: "message.webpush.headers", allowed: webpushHeaders)
        try checkStringMap(value["data"], at: "message.webpush.data", dataKeys: true)
        if let notification = value["notification"], notification.objectValue == nil {
            throw invalid("Invalid value at 'message.webpush.notification' "
                + "(type.googleapis.com/google.protobuf.Struct), \(notification.serialized()): must be a JSON object.")
        }
        try checkObject(value["fcm_options"], at: "message.webpush.fcm_options", fields: optionsFields,
                        strings: optionsFields)
        var derived = Derived()
        if let ttl = headers["ttl"] {
            guard ttl.utf8.count <= 8, let seconds = Int(ttl), seconds >= 0, seconds <= MessageValidator.maximumTTL,
                  ttl.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else {
                throw invalid("Invalid value at 'message.webpush.headers.TTL': whole seconds in "
                    + "0...\(MessageValidator.maximumTTL), got \(quoted(ttl)).")
            }
            derived.ttl = seconds
        }
        if let urgency = headers["urgency"] {
            guard urgencies.contains(urgency) else {
                throw invalid("Invalid value at 'message.webpush.headers.Urgency': very-low, low, normal or high, "
                    + "got \(quoted(urgency)).")
            }
            derived.priority = urgency == "high" ? .high : .normal
        }
        if let topic = headers["topic"], !Base64URL.isWebPushTopic(topic) {
            throw invalid("Invalid value at 'message.webpush.headers.Topic': 1 to 32 base64url characters "
                + "([A-Za-z0-9_-]), got \(quoted(topic)).")
        }
        return derived
    }

    /// A platform block's `headers` (a map of strings already): names among `allowed`, in any case and each once,
    /// values without CR, LF or NUL. The values by lowercase name.
    private static func checkHeaders(
        _ value: JSON?, at path: String, allowed: [String]
    ) throws(APIError) -> [String: String] {
        var headers: [String: String] = [:]
        for entry in value?.objectValue ?? [] {
            let name = entry.key.lowercased()
            guard allowed.contains(where: { $0.lowercased() == name }) else {
                throw invalid("Invalid value at '\(path)': \(quoted(entry.key)) is not a header a message may set; "
                    + "it may set " + allowed.joined(separator: ", ") + ".")
            }
            guard headers[name] == nil else {
                throw invalid("Invalid value at '\(path)': \(quoted(entry.key)) is given twice.")
            }
            let text = entry.value.stringValue ?? ""
            if MessageValidator.breaksHeader(text) {
                throw invalid("Invalid value at '\(path).\(entry.key)': a header value may not contain CR, LF or NUL.")
            }
            headers[name] = text
        }
        return headers
    }

    // MARK: - Field names

    /// Which objects hold FCM's own fields (as opposed to open maps such as `data`, `apns.headers`, `apns.payload`
    /// or `webpush.notification`, whose keys are the sender's): the request, the message, its `notification` and
    /// `fcm_options`, the platform blocks, and their `notification` and `fcm_options`.
    private enum Level {
        case request, message, android, platform, leaf

        func child(_ key: String) -> Level? {
            switch (self, key) {
            case (.request, "message"): .message
            case (.message, "android"): .android
            case (.message, "apns"), (.message, "webpush"): .platform
            case (.message, "notification"), (.message, "fcm_options"), (.android, "notification"),
                 (.android, "fcm_options"), (.platform, "fcm_options"):
                .leaf
            default: nil
            }
        }
    }

    /// FCM's JSON reader takes each field name as written in the API (`collapse_key`) or in lowerCamelCase
    /// (`collapseKey`), and some SDKs write the latter. Herald keeps one spelling, the API's, so that what it
    /// derives, renders and maps finds every field; values and open maps are left as they came. The SDKs that
    /// write the API's spelling pay one scan, no copy.
    static func snakeCased(_ request: JSON) -> JSON {
        hasCamelCase(request, at: .request) ? snakeCased(request, at: .request) : request
    }

    private static func hasCamelCase(_ value: JSON, at level: Level) -> Bool {
        guard case .object(let members) = value else { return false }
        for member in members {
            if member.key.utf8.contains(where: isUppercase) { return true }
            if let child = level.child(member.key), hasCamelCase(member.value, at: child) { return true }
        }
        return false
    }

    private static func snakeCased(_ value: JSON, at level: Level) -> JSON {
        guard case .object(let members) = value else { return value }
        return .object(members.map { member in
            let key = snakeCase(member.key)
            return (key, level.child(key).map { snakeCased(member.value, at: $0) } ?? member.value)
        })
    }

    private static func isUppercase(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func snakeCase(_ name: String) -> String {
        guard name.utf8.contains(where: isUppercase) else { return name }
        var result = ""
        for character in name {
            if character.isASCII && character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }

    // MARK: - Values

    /// An object whose members are all among `fields`, with those named in `strings` strings.
    private static func checkObject(
        _ value: JSON?, at path: String, fields: [String], strings: [String]
    ) throws(APIError) {
        guard let value else { return }
        guard let members = value.objectValue else {
            throw invalid("Invalid value at '\(path)': must be a JSON object, got \(value.serialized().prefix(64)).")
        }
        for member in members {
            guard fields.contains(member.key) else {
                throw invalid("Invalid JSON payload received. Unknown name \(quoted(member.key)) at '\(path)': "
                    + "Cannot find field.")
            }
            if strings.contains(member.key), member.value.stringValue == nil {
                throw invalid("Invalid value at '\(path).\(member.key)' (TYPE_STRING), "
                    + "\(member.value.serialized().prefix(64))")
            }
        }
    }

    /// A `map<string, string>`; for data maps, also FCM's reserved keys.
    private static func checkStringMap(_ value: JSON?, at path: String, dataKeys: Bool) throws(APIError) {
        guard let value else { return }
        guard let entries = value.objectValue else {
            throw invalid("Invalid value at '\(path)': must be a map of strings, got \(value.serialized().prefix(64)).")
        }
        for (index, entry) in entries.enumerated() {
            guard entry.value.stringValue != nil else {
                throw invalid("Invalid value at '\(path)[\(index)].value' (TYPE_STRING), "
                    + "\(entry.value.serialized().prefix(64)): the value of \(quoted(entry.key)) must be a string.")
            }
            if dataKeys && MessageValidator.isReservedDataKey(entry.key) {
                throw invalid("Invalid data payload key: \(quoted(entry.key)) in '\(path)' is reserved "
                    + "(from, message_type, google*, gcm*).")
            }
        }
    }

    /// What reaches the device, as compact JSON, within FCM's 4096 bytes (2048 for topics and conditions).
    private static func checkSize(_ message: JSON, target: MessageTarget) throws(APIError) {
        var encoded: [UInt8] = []
        message["data"]?.append(to: &encoded)
        message["notification"]?.append(to: &encoded)
        message["android"]?["data"]?.append(to: &encoded)
        message["android"]?["notification"]?.append(to: &encoded)
        message["apns"]?["payload"]?.append(to: &encoded)
        message["webpush"]?["data"]?.append(to: &encoded)
        message["webpush"]?["notification"]?.append(to: &encoded)
        let limit = target.isTopicOrCondition ? MessageValidator.topicPayloadLimit : MessageValidator.payloadLimit
        guard encoded.count <= limit else {
            throw invalid("Message is too big: its data, notifications and APNs payload take \(encoded.count) bytes "
                + "as compact JSON; the limit is \(limit)" + (target.isTopicOrCondition ? " for topics and conditions."
                    : "."))
        }
    }

    /// `"3600s"`, `"3.5s"`: whole seconds, the fraction dropped; nil when not a protobuf Duration.
    static func durationSeconds(_ text: String) -> Int? {
        guard text.hasSuffix("s") else { return nil }
        let parts = text.dropLast().split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let isDigits = { (part: Substring) in part.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        guard let whole = parts.first, (1...9).contains(whole.utf8.count), isDigits(whole) else { return nil }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].utf8.count), isDigits(parts[1]) else { return nil }
        }
        return Int(whole)
    }

    static func invalid(_ message: String) -> APIError {
        APIError(status: 400, code: "InvalidArgument", message: message)
    }

    private static func quoted(_ text: String) -> String {
        var result = ""
        appendJSONString(text.utf8.count > 64 ? String(text.prefix(60)) + "…" : text, to: &result)
        return result
    }
}
