import Delivery
import Queue
import Support

/// One message rendered for HMS Push Kit once, for every request its deliveries need (SPEC §21): the
/// `{"validate_only", "message"}` body without its target, which each request completes with up to 1000 tokens, or
/// its topic or condition. Pure: a function of the message and `now`.
///
/// The message is read in FCM v1's shape (a legacy-shaped one mapped there first, as for FCM v1) and mapped to
/// HMS's: `data` (or `android.data`) becomes one JSON string; `notification` {title, body, image} stays; `android`
/// becomes HMS's `android` with `urgency` from `priority`, `ttl` the remaining TTL (at least 1 s, at most HMS's
/// 15 days), `collapse_key` only when it is an integer −1…100, `bi_tag` from `fcm_options.analytics_label`, and a
/// `notification` whose `click_action` HMS requires (FCM's intent action as type 1, else type 3: open the app).
///
/// ```swift
/// let rendered = HMSMessage(message, now: now)   // payload {"data":{"score":"4x8"},"android":{"priority":"HIGH"}}
/// rendered.body(tokens: ["t1", "t2"])
/// // {"validate_only":false,"message":{"data":"{\"score\":\"4x8\"}","android":{"urgency":"HIGH","ttl":"3600s"},
/// //  "token":["t1","t2"]}}
/// ```
public struct HMSMessage: Sendable {
    public static let maximumTokensPerRequest = 1000
    /// The message without its tokens may not be longer (Huawei's send API).
    public static let maximumMessageBytes = 4096
    /// How long Huawei keeps a message for an offline device at most.
    public static let maximumTTLSeconds = 15 * 86_400

    /// `{"validate_only":…,"message":{` and the members, without the closing braces.
    private let head: [UInt8]
    private let hasMembers: Bool
    /// The length of the `message` object without its target: what Huawei's 4096-byte limit counts.
    public let messageBytes: Int

    public init(_ message: ClaimedMessage, now: Int64) {
        let v1 = message.format == .v1
            ? (try? JSON.parse(Array(message.payload.utf8))) ?? .object([])
            : .object(V1Message.fields(for: message, now: now))
        self.init(members: Self.members(fromV1: v1, remainingTTL: message.remainingTTL(now: now)),
                  dryRun: message.dryRun)
    }

    init(members: [(key: String, value: JSON)], dryRun: Bool) {
        var head = Array(#"{"validate_only":\#(dryRun),"message":"#.utf8)
        let start = head.count
        JSON.object(members).append(to: &head)
        messageBytes = head.count - start
        head.removeLast()
        self.head = head
        hasMembers = !members.isEmpty
    }

    public var isTooBig: Bool { messageBytes > Self.maximumMessageBytes }

    /// The body for up to 1000 device tokens.
    public func body(tokens: [String]) -> [UInt8] {
        var bytes = head
        bytes.reserveCapacity(head.count + tokens.reduce(16) { $0 + $1.utf8.count + 3 })
        bytes += (hasMembers ? #","token":["# : #""token":["#).utf8
        for (index, token) in tokens.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendJSONString(token, to: &bytes)
        }
        bytes += "]}}".utf8
        return bytes
    }

    /// The body for a topic (with or without `/topics/`) or a condition.
    public func body(_ kind: TargetKind, target: String) -> [UInt8] {
        if kind == .tokens { return body(tokens: [target]) }
        var bytes = head
        bytes += (hasMembers ? "," : "").utf8
        bytes += (kind == .topic ? #""topic":"# : #""condition":"#).utf8
        let prefix = "/topics/"
        appendJSONString(kind == .topic && target.hasPrefix(prefix) ? String(target.dropFirst(prefix.count)) : target,
                         to: &bytes)
        bytes += "}}".utf8
        return bytes
    }

    // MARK: - FCM v1's shape to HMS's

    static func members(fromV1 v1: JSON, remainingTTL: Int) -> [(key: String, value: JSON)] {
        var members: [(key: String, value: JSON)] = []
        let android = v1["android"]
        // FCM v1's `android.data` replaces `data` on Android; HMS takes one string, which the app parses.
        if let data = (android?["data"] ?? v1["data"])?.objectValue {
            let strings = JSON.object(data.map { ($0.key, .string(V1Message.text($0.value))) })
            members.append(("data", .string(strings.serialized())))
        }
        let common = pick(v1["notification"], ["title", "body", "image"])
        if !common.isEmpty { members.append(("notification", .object(common))) }
        var config: [(key: String, value: JSON)] = []
        if let collapseKey = android?["collapse_key"].flatMap(collapseKey) {
            config.append(("collapse_key", .int(collapseKey)))
        }
        if let priority = android?["priority"]?.stringValue?.uppercased(), priority == "HIGH" || priority == "NORMAL" {
            config.append(("urgency", .string(priority)))
        }
        config.append(("ttl", .string("\(min(max(1, remainingTTL), maximumTTLSeconds))s")))
        if let label = android?["fcm_options"]?["analytics_label"]?.stringValue {
            config.append(("bi_tag", .string(label)))
        }
        if !common.isEmpty || android?["notification"] != nil {
            config.append(("notification", .object(notification(android?["notification"]))))
        }
        members.append(("android", .object(config)))
        return members
    }

    /// FCM v1's `android.notification` in HMS's words.
    private static func notification(_ fcm: JSON?) -> [(key: String, value: JSON)] {
        var hms = pick(fcm, [
            "title", "body", "icon", "color", "sound", "default_sound", "tag", "body_loc_key", "body_loc_args",
            "title_loc_key", "title_loc_args", "channel_id", "image", "ticker", "visibility",
        ])
        for (from, to) in [("default_vibrate_timings", "use_default_vibrate"), ("default_light_settings",
                                                                              "use_default_light")] {
            if let value = fcm?[from]?.boolValue { hms.append((to, .bool(value))) }
        }
        if let sticky = fcm?["sticky"]?.boolValue { hms.append(("auto_cancel", .bool(!sticky))) }
        if let priority = fcm?["notification_priority"]?.stringValue {
            let importance = switch priority {
            case "PRIORITY_MIN", "PRIORITY_LOW": "LOW"
            case "PRIORITY_HIGH", "PRIORITY_MAX": "HIGH"
            default: "NORMAL"
            }
            hms.append(("importance", .string(importance)))
        }
        if fcm?["sound"] == nil && fcm?["default_sound"] == nil { hms.append(("default_sound", true)) }
        let action = fcm?["click_action"]?.stringValue
        hms.append(("click_action", action.map { .object([("type", 1), ("action", .string($0))]) }
            ?? .object([("type", 3)])))
        return hms
    }

    /// HMS's `collapse_key` is an integer from −1 to 100 (−1: every message kept); anything else goes without one,
    /// and only Herald's own collapse in the queue applies.
    static func collapseKey(_ value: JSON) -> Int64? {
        guard let key = value.int64Value ?? value.stringValue.flatMap({ Int64($0) }), (-1...100).contains(key)
        else { return nil }
        return key
    }

    private static func pick(_ object: JSON?, _ keys: [String]) -> [(key: String, value: JSON)] {
        guard let object else { return [] }
        return keys.compactMap { key in object[key].map { (key, $0) } }
    }
}
