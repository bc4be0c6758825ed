import FCMSimulator
import Foundation
import Support

/// A `POST /fcm/send` body as the simulator understands it, in either of FCM's legacy formats.
///
/// Parsing is pure: it reads the body and decides what FCM would reject with 400 (a `BadRequest`) and which
/// whole-message error every recipient gets (`messageError`). Unknown JSON fields are ignored.
struct SendRequest: Sendable {
    enum Target: Sendable {
        /// Device tokens in request order; `to` is the `to` value when the request named one token that way.
        case tokens([String], to: String?)
        /// `to` as sent, `/topics/<name>`.
        case topic(String)
        case condition(String)
    }

    var format: FCMSimulator.Format
    /// Nil only for a plain-text request without `registration_id`, which FCM answers `Error=MissingRegistration`.
    var target: Target?
    /// The `time_to_live` sent, when it is an integer (in range or not).
    var timeToLive: Int?
    var collapseKey: String?
    var priority: String?
    var dryRun = false
    /// `InvalidTtl`, `InvalidDataKey` or `MessageTooBig`: every recipient gets it.
    var messageError: String?

    static let maximumRegistrationIDs = 1000

    init(format: FCMSimulator.Format) {
        self.format = format
    }
}

// MARK: - JSON

extension SendRequest {
    static func parseJSON(_ body: [UInt8]) -> Result<SendRequest, BadRequest> {
        Result { () throws(BadRequest) in try readJSON(body) }
    }

    private static func readJSON(_ body: [UInt8]) throws(BadRequest) -> SendRequest {
        let message: JSON
        do {
            message = try JSON.parse(body)
        } catch {
            throw BadRequest(message: "JSON_PARSING_ERROR: \(error)")
        }
        guard message.objectValue != nil else {
            throw BadRequest(message: "JSON_PARSING_ERROR: the body must be a JSON object")
        }
        var request = SendRequest(format: .json)
        request.target = try jsonTarget(message)
        request.collapseKey = try optional(message, "collapse_key", \.stringValue, "a string")
        request.priority = try optional(message, "priority", \.stringValue, "a string")
        _ = try optional(message, "restricted_package_name", \.stringValue, "a string")
        for flag in ["content_available", "mutable_content", "delay_while_idle"] {
            _ = try optional(message, flag, \.boolValue, "true or false")
        }
        request.dryRun = try optional(message, "dry_run", \.boolValue, "true or false") ?? false
        let data = try optional(message, "data", \.objectValue, "a JSON object")
        _ = try optional(message, "notification", \.objectValue, "a JSON object")

        var ttlIsValid = true
        if let ttl = message["time_to_live"] {
            let seconds = ttl.int64Value.flatMap { Int(exactly: $0) }
            request.timeToLive = seconds
            ttlIsValid = seconds.map { (0...FCMMessageRules.maximumTTL).contains($0) } ?? false
        }
        var payload: [UInt8] = []
        message["data"]?.append(to: &payload)
        message["notification"]?.append(to: &payload)
        request.messageError = wholeMessageError(
            ttlIsValid: ttlIsValid, dataKeys: (data ?? []).lazy.map(\.key), payloadBytes: payload.count,
            limit: request.isTopicOrCondition ? FCMMessageRules.topicPayloadLimit : FCMMessageRules.payloadLimit)
        return request
    }

    private static func jsonTarget(_ message: JSON) throws(BadRequest) -> Target {
        let named = ["to", "registration_ids", "condition"].filter { message[$0] != nil }
        guard named.count == 1 else {
            throw BadRequest(message: named.isEmpty
                ? "Missing \"to\", \"registration_ids\" or \"condition\" field"
                : "Only one of \"to\", \"registration_ids\" and \"condition\" may be given")
        }
        if let to = message["to"] {
            guard let to = to.stringValue else { throw BadRequest(message: "Field \"to\" must be a JSON string") }
            guard to.hasPrefix("/topics/") else { return .tokens([to], to: to) }
            let name = to.utf8.dropFirst("/topics/".utf8.count)
            guard !name.isEmpty, name.allSatisfy(FCMMessageRules.isTopicNameByte) else {
                throw BadRequest(message: "Invalid topic name in \"to\": a topic name is [a-zA-Z0-9-_.~%]+")
            }
            return .topic(to)
        }
        if let ids = message["registration_ids"] {
            guard let items = ids.arrayValue else {
                throw BadRequest(message: "Field \"registration_ids\" must be a JSON array")
            }
            guard !items.isEmpty else { throw BadRequest(message: "Field \"registration_ids\" must not be empty") }
            guard items.count <= maximumRegistrationIDs else {
                throw BadRequest(message: "Number of messages on bulk (\(items.count)) exceeds maximum allowed "
                    + "(\(maximumRegistrationIDs))")
            }
            var tokens: [String] = []
            tokens.reserveCapacity(items.count)
            for item in items {
                guard let token = item.stringValue else {
                    throw BadRequest(message: "Field \"registration_ids\" must hold only JSON strings")
                }
                tokens.append(token)
            }
            return .tokens(tokens, to: nil)
        }
        guard let condition = message["condition"]?.stringValue, !condition.isEmpty else {
            throw BadRequest(message: "Field \"condition\" must be a non-empty JSON string")
        }
        return .condition(condition)
    }

    private static func optional<Value>(
        _ message: JSON, _ field: String, _ read: (JSON) -> Value?, _ expected: String
    ) throws(BadRequest) -> Value? {
        guard let value = message[field] else { return nil }
        guard let typed = read(value) else { throw BadRequest(message: "Field \"\(field)\" must be \(expected)") }
        return typed
    }
}

// MARK: - Plain text

extension SendRequest {
    /// `application/x-www-form-urlencoded`: one `registration_id`, options, and `data.<key>=value` pairs.
    static func parsePlain(_ body: [UInt8]) -> Result<SendRequest, BadRequest> {
        Result { () throws(BadRequest) in try readPlain(body) }
    }

    private static func readPlain(_ body: [UInt8]) throws(BadRequest) -> SendRequest {
        var request = SendRequest(format: .plain)
        var ttlIsValid = true
        var data: [(String, JSON)] = []
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let key = try formDecoded(parts[0])
            let value = parts.count > 1 ? try formDecoded(parts[1]) : ""
            switch key {
            case "registration_id":
                guard request.target == nil else {
                    throw BadRequest(message: "A plain-text request takes one registration_id")
                }
                request.target = .tokens([value], to: nil)
            case "collapse_key": request.collapseKey = value
            case "priority": request.priority = value
            case "dry_run": request.dryRun = value == "1" || value == "true"
            case "time_to_live":
                request.timeToLive = Int(value)
                ttlIsValid = request.timeToLive.map { (0...FCMMessageRules.maximumTTL).contains($0) } ?? false
            default:
                if key.hasPrefix("data.") { data.append((String(key.dropFirst("data.".count)), .string(value))) }
            }
        }
        let payload = data.isEmpty ? "" : JSON(members: data).serialized()
        request.messageError = wholeMessageError(
            ttlIsValid: ttlIsValid, dataKeys: data.lazy.map(\.0), payloadBytes: payload.utf8.count,
            limit: FCMMessageRules.payloadLimit)
        return request
    }

    /// Percent-decoded, `+` as a space; FCM answers 400 to what does not decode to UTF-8.
    private static func formDecoded(_ bytes: ArraySlice<UInt8>) throws(BadRequest) -> String {
        let spaced = String(decoding: bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        guard let decoded = spaced.removingPercentEncoding else {
            throw BadRequest(message: "Malformed form encoding in the request body")
        }
        return decoded
    }
}

// MARK: - Shared rules

extension SendRequest {
    var isTopicOrCondition: Bool {
        switch target {
        case .topic, .condition: true
        case .tokens, nil: false
        }
    }

    /// The same order as Herald's validator, so both name the same error for one message:
    /// `InvalidTtl`, then `InvalidDataKey`, then `MessageTooBig`.
    private static func wholeMessageError(
        ttlIsValid: Bool, dataKeys: some Sequence<String>, payloadBytes: Int, limit: Int
    ) -> String? {
        if !ttlIsValid { return "InvalidTtl" }
        if dataKeys.contains(where: FCMMessageRules.isReservedDataKey) { return "InvalidDataKey" }
        if payloadBytes > limit { return "MessageTooBig" }
        return nil
    }
}
