import FCMSimulator
import Support

/// A `POST /v1/projects/{p}/messages:send` body as the simulator understands it: the target, and what the request
/// log keeps. Parsing is pure; what FCM would refuse with 400 `INVALID_ARGUMENT` is a `V1Request.Invalid`.
struct V1Request: Sendable {
    enum Target: Sendable, Equatable {
        case token(String)
        /// A Firebase Installation ID (`message.fid`), answered as a token with the same name would be.
        case fid(String)
        /// As sent, without `/topics/`.
        case topic(String)
        case condition(String)
    }

    var target: Target
    var validateOnly = false
    /// `android.ttl` in whole seconds.
    var timeToLive: Int?
    var collapseKey: String?
    var priority: String?
    /// The `message` object as received, for the request log.
    var message: JSON = .null

    /// FCM's message for a refused body, and the field it names when it names one.
    struct Invalid: Error, Sendable, Equatable {
        var message: String
        var field: String?
    }

    private static let topLevel: Set = ["validate_only", "message"]
    private static let messageFields: Set = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "fid", "topic",
        "condition",
    ]

    static func parse(_ body: [UInt8]) -> Result<V1Request, Invalid> {
        Result { () throws(Invalid) in try read(body) }
    }

    private static func read(_ body: [UInt8]) throws(Invalid) -> V1Request {
        guard let request = try? JSON.parse(body), let members = request.objectValue else {
            throw Invalid(message: "Invalid JSON payload received. The body must be a JSON object.")
        }
        for member in members where !topLevel.contains(member.key) {
            throw Invalid(message: "Invalid JSON payload received. Unknown name \"\(member.key)\": Cannot find field.")
        }
        guard let message = request["message"], let fields = message.objectValue else {
            throw Invalid(message: "Invalid JSON payload received. \"message\" must be an object.", field: "message")
        }
        for field in fields where !messageFields.contains(field.key) {
            throw Invalid(message: "Invalid JSON payload received. Unknown name \"\(field.key)\" at 'message': "
                + "Cannot find field.", field: "message.\(field.key)")
        }
        let targets = ["token", "fid", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1, let value = message[targets[0]]?.stringValue, !value.isEmpty else {
            throw Invalid(message: "Exactly one of message.token, message.fid, message.topic or message.condition "
                + "must be a non-empty string.", field: "message")
        }
        let target: Target
        switch targets[0] {
        case "token": target = .token(value)
        case "fid": target = .fid(value)
        case "topic":
            guard value.utf8.allSatisfy(FCMMessageRules.isTopicNameByte) else {
                throw Invalid(message: "Invalid topic name \(value).", field: "message.topic")
            }
            target = .topic(value)
        default: target = .condition(value)
        }
        var parsed = V1Request(target: target)
        parsed.message = message
        if let validateOnly = request["validate_only"] {
            guard let flag = validateOnly.boolValue else {
                throw Invalid(message: "Invalid value at 'validate_only' (TYPE_BOOL).", field: "validate_only")
            }
            parsed.validateOnly = flag
        }
        if let data = message["data"] {
            guard let entries = data.objectValue else {
                throw Invalid(message: "Invalid value at 'message.data': must be a map.", field: "message.data")
            }
            for (index, entry) in entries.enumerated() {
                guard entry.value.stringValue != nil else {
                    throw Invalid(message: "Invalid value at 'message.data[\(index)].value' (TYPE_STRING), "
                        + entry.value.serialized(), field: "message.data[\(index)].value")
                }
                if FCMMessageRules.isReservedDataKey(entry.key) {
                    throw Invalid(message: "Invalid data payload key: \(entry.key)", field: "message.data")
                }
            }
        }
        var payload: [UInt8] = []
        message["data"]?.append(to: &payload)
        message["notification"]?.append(to: &payload)
        let limit = target.isDevice ? FCMMessageRules.payloadLimit : FCMMessageRules.topicPayloadLimit
        if payload.count > limit {
            throw Invalid(message: "Message is too big: data and notification take \(payload.count) bytes, over "
                + "\(limit).", field: "message")
        }
        if let android = message["android"] {
            guard android.objectValue != nil else {
                throw Invalid(
                    message: "Invalid value at 'message.android': must be an object.", field: "message.android")
            }
            if let ttl = android["ttl"] {
                guard let seconds = ttl.stringValue.flatMap(durationSeconds), seconds <= FCMMessageRules.maximumTTL
                else {
                    throw Invalid(message: "Invalid value at 'message.android.ttl' "
                        + "(type.googleapis.com/google.protobuf.Duration), \(ttl.serialized())",
                        field: "message.android.ttl")
                }
                parsed.timeToLive = seconds
            }
            if let priority = android["priority"] {
                guard let text = priority.stringValue, ["NORMAL", "HIGH", "normal", "high"].contains(text) else {
                    throw Invalid(message: "Invalid value at 'message.android.priority' "
                        + "(type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), "
                        + priority.serialized(), field: "message.android.priority")
                }
                parsed.priority = text.lowercased()
            }
            parsed.collapseKey = android["collapse_key"]?.stringValue
        }
        if let headers = message["apns"]?["headers"] {
            guard let entries = headers.objectValue, entries.allSatisfy({ $0.value.stringValue != nil }) else {
                throw Invalid(message: "Invalid value at 'message.apns.headers': a map of strings.",
                              field: "message.apns.headers")
            }
        }
        return parsed
    }

    /// `"3600s"`, `"3.5s"`: whole seconds, the fraction dropped.
    private static func durationSeconds(_ text: String) -> Int? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 9, whole.allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].count), parts[1].allSatisfy({ $0.isASCII && $0.isNumber }) else {
                return nil
            }
        }
        return Int(whole)
    }
}

extension V1Request.Target {
    var isDevice: Bool {
        switch self {
        case .token, .fid: true
        case .topic, .condition: false
        }
    }
}
