import Foundation
import HTTP
import Queue
import Support

/// A `POST /fcm/send` request read the way FCM reads it (SPEC §3, `shared/fcm/PROTOCOL.md`), checked with
/// `MessageValidator`'s rules, and the answer FCM's client libraries expect once the message is stored.
///
/// FCM splits failures in two, and so does this type:
/// - the request is wrong — the body is not JSON, a field is unknown or of the wrong JSON type, more than 1000
///   `registration_ids`, a `priority` or `condition` FCM refuses: `read` fails with an `APIError`, answered
///   HTTP 400, and nothing is stored;
/// - a recipient cannot be sent to — no target (`MissingRegistration`), an empty token (`InvalidRegistration`),
///   or a message every recipient refuses (`InvalidTtl`, `InvalidDataKey`, `MessageTooBig`): HTTP 200 with the
///   error in that recipient's result, so client libraries file it per token as they do FCM's.
///
/// ```swift
/// let send = try FCMSendRequest.read(
///     contentType: "application/json", body: Array(#"{"registration_ids":["a",""]}"#.utf8), app: nil).get()
/// send.recipients        // [.delivery(0), .error("InvalidRegistration")]
/// // store send.message, then
/// send.answer(accepted)  // 200 {"multicast_id":7,"success":1,"failure":1,"canonical_ids":0,
///                        //      "results":[{"message_id":"01JD3M…:0"},{"error":"InvalidRegistration"}]}
/// ```
struct FCMSendRequest: Sendable {
    enum Format: Sendable, Equatable {
        /// `Content-Type: application/json`, answered with FCM's JSON bodies.
        case json
        /// Any other `Content-Type`, or none (FCM's rule): form fields, answered `id=…` or `Error=…`.
        case plainText
    }

    /// What one recipient the client named gets, in the order it named them.
    enum Recipient: Sendable, Equatable {
        /// Queued as the message's delivery number `index`: 0-based, in `deliveries.id` order. A token named twice
        /// is queued once, and both of its positions name that delivery.
        case delivery(Int)
        /// Not queued: FCM's error code for it.
        case error(String)
    }

    var format: Format
    /// A topic or a condition: FCM answers `{"message_id": <integer>}` or `{"error": …}`, not a multicast body.
    var isTopic: Bool
    var recipients: [Recipient]
    /// What to store; nil when no recipient gets a delivery.
    var message: IncomingMessage?

    /// FCM refuses bigger multicasts with HTTP 400; Herald's own `/v1/messages` takes more and splits them.
    static let maximumRegistrationIDs = 1000
}

// MARK: - Reading

extension FCMSendRequest {
    /// - Parameters:
    ///   - contentType: the `Content-Type` header; JSON only when it says `application/json`.
    ///   - app: the `X-Herald-App` header, default `default`.
    static func read(contentType: String?, body: [UInt8], app: String?) -> Result<FCMSendRequest, APIError> {
        Result { () throws(APIError) in
            let app = app ?? MessageValidator.defaultApp
            guard MessageValidator.isValidAppName(app) else {
                throw .invalidParameters("X-Herald-App must be 1 to 100 characters from [A-Za-z0-9._-]")
            }
            switch format(of: contentType) {
            case .json: return try readJSON(body, app: app)
            case .plainText: return try readPlainText(body, app: app)
            }
        }
    }

    /// FCM reads a body as JSON only when told so; any other `Content-Type`, or none, means plain text.
    static func format(of contentType: String?) -> Format {
        guard let contentType else { return .plainText }
        let mediaType = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "application/json" ? .json : .plainText
    }

    /// The codes FCM answers with HTTP 200 inside the results; every other validation failure is an HTTP 400.
    private static let recipientErrors = ["MissingRegistration", "InvalidTtl", "InvalidDataKey", "MessageTooBig"]

    /// Stands in for a `registration_ids` whose every token is empty, so that the rest of the message is still
    /// checked (a 400 or a message-wide error outranks `InvalidRegistration`); it is never stored.
    private static let placeholderToken = "herald-placeholder-token"

    // MARK: JSON

    private enum FieldType {
        case string, strings, boolean, number, object
        /// `send_at`: RFC 3339 text or Unix milliseconds, read by `MessageValidator`.
        case time

        var name: String {
            switch self {
            case .string: "a JSON string"
            case .strings: "a JSON array of strings"
            case .boolean: "true or false"
            case .number: "a JSON number"
            case .object: "a JSON object"
            case .time: "a JSON string or number"
            }
        }

        func matches(_ value: JSON) -> Bool {
            switch self {
            case .string: value.stringValue != nil
            case .strings: value.arrayValue?.allSatisfy { $0.stringValue != nil } ?? false
            case .boolean: value.boolValue != nil
            case .number: if case .number = value { true } else { false }
            case .object: value.objectValue != nil
            case .time: value.stringValue != nil || FieldType.number.matches(value)
            }
        }
    }

    /// Table 1 of FCM's legacy HTTP reference, plus `fcm_options` (analytics labels, sent by node-gcm): every field
    /// FCM takes, with its JSON type, and Herald's `send_at` (SPEC §23). Herald's own `app` and `users` are not among
    /// them.
    private static let jsonFields: [(name: String, type: FieldType)] = [
        ("to", .string), ("registration_ids", .strings), ("condition", .string),
        ("collapse_key", .string), ("priority", .string), ("content_available", .boolean),
        ("mutable_content", .boolean), ("delay_while_idle", .boolean), ("time_to_live", .number),
        ("restricted_package_name", .string), ("dry_run", .boolean),
        ("data", .object), ("notification", .object), ("fcm_options", .object), ("send_at", .time),
    ]

    private static func readJSON(_ body: [UInt8], app: String) throws(APIError) -> FCMSendRequest {
        let parsed: JSON
        do {
            parsed = try JSON.parse(body)
        } catch {
            throw .invalidJSON("the body is not valid JSON: \(error)")
        }
        guard case .object(let members) = parsed else { throw .invalidJSON("the body must be a JSON object") }
        // Serializers write null for an option left unset: reading it as absent is what their users expect.
        var fields = members.filter { !$0.value.isNull }
        for field in fields {
            guard let known = jsonFields.first(where: { sameBytes($0.name, field.key) }) else {
                throw .invalidParameters(unknownField(field.key))
            }
            guard known.type.matches(field.value) else {
                throw .invalidParameters("Field \"\(known.name)\" must be \(known.type.name)")
            }
        }

        let message = JSON.object(fields)
        let to = message["to"]?.stringValue
        let registrationIDs = message["registration_ids"]?.arrayValue?.compactMap(\.stringValue)
        if let registrationIDs, registrationIDs.count > maximumRegistrationIDs {
            throw .invalidParameters("Number of messages on bulk (\(registrationIDs.count)) exceeds maximum "
                + "allowed (\(maximumRegistrationIDs))")
        }
        let namesTopic = message["condition"] != nil || (to?.utf8.starts(with: "/topics/".utf8) ?? false)
        // Results follow the request: one per `registration_ids` entry, or one for `to` or no target at all.
        let requested = registrationIDs ?? [to ?? ""]

        // `fcm_options` is FCM's but not `MessageValidator`'s: it is checked above and travels with the payload.
        let fcmOptions = message["fcm_options"]
        fields.removeAll { sameBytes($0.key, "fcm_options") }
        // An empty token is an error for its own position only, as at FCM: the others are checked and queued.
        if let registrationIDs, !registrationIDs.isEmpty {
            let tokens = registrationIDs.filter { !$0.isEmpty }
            let checked = tokens.isEmpty ? [placeholderToken] : tokens
            fields = fields.map { field in
                sameBytes(field.key, "registration_ids") ? (field.key, .array(checked.map(JSON.string))) : field
            }
        }
        fields.append(("app", .string(app)))

        var request = try validate(.object(fields), format: .json, requested: requested, namesTopic: namesTopic)
        if let fcmOptions, case .object(let payload)? = request.message?.payload {
            request.message?.payload = .object(payload + [("fcm_options", fcmOptions)])
        }
        return request
    }

    private static func unknownField(_ name: String) -> String {
        var quotedName = ""
        appendJSONString(name.utf8.count > 64 ? String(name.prefix(60)) + "…" : name, to: &quotedName)
        let hint = sameBytes(name, "app") ? "; name the app with the X-Herald-App header" : ""
        return "unknown field \(quotedName)\(hint)"
    }

    // MARK: Plain text

    private static func readPlainText(_ body: [UInt8], app: String) throws(APIError) -> FCMSendRequest {
        let form: FormBody
        do {
            form = try FormBody.parse(body)
        } catch {
            throw .invalidParameters("the body is not form encoding (application/x-www-form-urlencoded): "
                + error.message)
        }
        var registrationID: String?
        var options: [(String, JSON)] = []
        var data: [(String, JSON)] = []
        for (name, value) in form.fields {
            if name.utf8.starts(with: "data.".utf8) {
                data.append((String(decoding: name.utf8.dropFirst(5), as: UTF8.self), .string(value)))
                continue
            }
            // Every name here is ASCII without a canonical equivalent, so String's == is byte equality.
            switch name {
            case "registration_id":
                if let registrationID, !sameBytes(registrationID, value) {
                    throw .invalidParameters("a plain-text request takes one registration_id; "
                        + "send JSON with registration_ids to reach several")
                }
                registrationID = value
            case "collapse_key", "priority", "restricted_package_name", "send_at":
                options.append((name, .string(value)))
            case "content_available", "mutable_content", "delay_while_idle", "dry_run":
                options.append((name, .bool(try flag(value, name: name))))
            case "time_to_live":
                // Anything but an integer is left a string, which the validator answers InvalidTtl.
                options.append((name, Int64(value).map(JSON.int) ?? .string(value)))
            default:
                let looksLikeJSON = name.utf8.first == UInt8(ascii: "{")
                throw .invalidParameters(unknownField(name)
                    + (looksLikeJSON ? "; a JSON body needs Content-Type: application/json" : ""))
            }
        }
        var members: [(String, JSON)] = []
        if let registrationID { members.append(("to", .string(registrationID))) }
        members += options
        if !data.isEmpty { members.append(("data", JSON(members: data))) }
        members.append(("app", .string(app)))
        // A repeated option or data key keeps its last value.
        return try validate(
            JSON(members: members), format: .plainText, requested: [registrationID ?? ""],
            namesTopic: registrationID?.utf8.starts(with: "/topics/".utf8) ?? false)
    }

    /// Form booleans as client libraries write them: `1`/`0` (gcm-java), `True`/`False` (Python), `true`/`false`.
    private static func flag(_ value: String, name: String) throws(APIError) -> Bool {
        switch value.lowercased() {
        case "1", "true": return true
        case "0", "false": return false
        default: throw .invalidParameters("\(name) must be 1, 0, true or false")
        }
    }

    // MARK: Both

    /// Runs `MessageValidator` over the message in its JSON form and sorts the outcome into FCM's two kinds.
    /// - Parameter requested: the tokens the client named, in order (empty strings included).
    private static func validate(
        _ object: JSON, format: Format, requested: [String], namesTopic: Bool
    ) throws(APIError) -> FCMSendRequest {
        let message: IncomingMessage
        switch MessageValidator.validate(object: object) {
        case .failure(let failure):
            guard recipientErrors.contains(failure.code) else { throw failure }
            // No target is one missing recipient; a message-wide error is reported for each recipient named.
            let count = failure.code == "MissingRegistration" ? 1 : max(requested.count, 1)
            return FCMSendRequest(
                format: format, isTopic: namesTopic,
                recipients: Array(repeating: .error(failure.code), count: count), message: nil)
        case .success(let valid):
            message = valid
        }

        let recipients: [Recipient]
        switch message.target {
        case .tokens(let queued):
            var index: [[UInt8]: Int] = [:]
            for (position, token) in queued.enumerated() { index[Array(token.utf8)] = position }
            recipients = requested.map { token in
                index[Array(token.utf8)].map(Recipient.delivery) ?? .error("InvalidRegistration")
            }
        case .topic, .condition, .users:
            recipients = [.delivery(0)]
        }
        let queuesAny = recipients.contains { if case .delivery = $0 { true } else { false } }
        return FCMSendRequest(
            format: format, isTopic: message.target.isTopicOrCondition, recipients: recipients,
            message: queuesAny ? message : nil)
    }
}

// MARK: - Answering

extension FCMSendRequest {
    /// FCM's answer, in the request's format. `accepted` is what storage answered for `message`; nil when
    /// `message` is nil (nothing stored).
    ///
    /// Identifiers name Herald's rows: each result's `message_id` is `<message id>:<delivery index>`, and the
    /// integer `multicast_id` (or a topic's `message_id`) is the message's rowid — `SELECT id FROM messages
    /// WHERE rowid = ?`, or `0` when nothing was stored.
    func answer(_ accepted: AcceptedMessage?) -> HTTPResponse {
        let outcomes: [(messageID: String?, error: String?)] = recipients.map { recipient in
            switch recipient {
            case .delivery(let index):
                // A delivery without a stored message cannot happen; if it did, the client should retry.
                guard let accepted else { return (nil, "InternalServerError") }
                return ("\(accepted.id):\(index)", nil)
            case .error(let code):
                return (nil, code)
            }
        }
        switch format {
        case .plainText:
            let outcome = outcomes.first ?? (nil, "MissingRegistration")
            return .text(200, outcome.messageID.map { "id=\($0)" } ?? "Error=\(outcome.error ?? "")")
        case .json where isTopic:
            let outcome = outcomes.first ?? (nil, "MissingRegistration")
            let body: JSON = if outcome.messageID != nil, let accepted {
                .object([("message_id", .int(accepted.rowID))])
            } else {
                .object([("error", .string(outcome.error ?? "InternalServerError"))])
            }
            return .json(200, body.serialized())
        case .json:
            let results: [JSON] = outcomes.map { outcome in
                if let messageID = outcome.messageID { .object([("message_id", .string(messageID))]) }
                else { .object([("error", .string(outcome.error ?? ""))]) }
            }
            let success = outcomes.count(where: { $0.messageID != nil })
            let body = JSON.object([
                ("multicast_id", .int(accepted?.rowID ?? 0)),
                ("success", .int(success)),
                ("failure", .int(outcomes.count - success)),
                ("canonical_ids", .int(0)),
                ("results", .array(results)),
            ])
            return .json(200, body.serialized())
        }
    }
}

/// Field names and tokens are compared by bytes, as FCM and the database compare them.
private func sameBytes(_ left: String, _ right: String) -> Bool {
    left.utf8.count == right.utf8.count && left.utf8.elementsEqual(right.utf8)
}
