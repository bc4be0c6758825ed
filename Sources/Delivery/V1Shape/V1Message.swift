import Classify
import Queue
import Support

/// The FCM HTTP v1 request body for one target of a stored, legacy-shaped message (SPEC §12), rendered once per
/// send through `V1Template`:
/// `{"validate_only": dry_run, "message": {...}}`.
///
/// ```swift
/// let body = V1Message.body(for: message, target: "tok-1", kind: .tokens, now: now)
/// // {"validate_only":false,"message":{"token":"tok-1","data":{"score":"4x8"},
/// //  "android":{"ttl":"3600s"},"apns":{"headers":{"apns-expiration":"1700003600"}}}}
/// ```
///
/// What legacy has no v1 place for (`delay_while_idle`, notification keys v1 does not know) is left out.
public enum V1Message {
    /// APNs refuses an `apns-collapse-id` longer than this; a longer legacy `collapse_key` still collapses on Android.
    public static let maximumAPNsCollapseIDBytes = 64

    public static func body(for message: ClaimedMessage, target: String, kind: TargetKind, now: Int64) -> [UInt8] {
        template(for: message, now: now).body(target: target, kind: kind, elapsedSeconds: 0)
    }

    /// The mapped message rendered once for every target of one send: all that differs between them is the target,
    /// since the remaining TTL is the same at `now`.
    public static func template(for message: ClaimedMessage, now: Int64) -> V1Template {
        V1Template(dryRun: message.dryRun, tokenField: message.tokenField, members: fields(for: message, now: now))
    }

    /// The v1 `message` members of a legacy-shaped message, without the target.
    public static func fields(for message: ClaimedMessage, now: Int64) -> [(key: String, value: JSON)] {
        let stored = (try? JSON.parse(Array(message.payload.utf8))) ?? .object([])
        let remaining = message.remainingTTL(now: now)
        var fields: [(key: String, value: JSON)] = []
        if let data = stored["data"]?.objectValue {
            fields.append(("data", .object(data.map { ($0.key, .string(text($0.value))) })))
        }
        let notification = stored["notification"]
        let alert = members(of: notification, ["title", "body"]) { .string(text($0)) }
        if !alert.isEmpty { fields.append(("notification", .object(alert))) }
        fields.append(("android", android(stored, notification: notification, remaining: remaining)))
        fields.append(("apns", apns(stored, notification: notification, alert: alert, remaining: remaining, now: now)))
        return fields
    }

    // MARK: - Platforms

    /// `collapse_key`, `priority`, `ttl` (the remaining TTL), `restricted_package_name`, and the Android keys of
    /// the legacy notification.
    private static func android(_ stored: JSON, notification: JSON?, remaining: Int) -> JSON {
        var android: [(key: String, value: JSON)] = []
        if let collapseKey = stored["collapse_key"]?.stringValue {
            android.append(("collapse_key", .string(collapseKey)))
        }
        if let priority = stored["priority"]?.stringValue {
            android.append(("priority", .string(Priority(rawValue: priority) == .high ? "HIGH" : "NORMAL")))
        }
        android.append(("ttl", .string("\(remaining)s")))
        if let package = stored["restricted_package_name"]?.stringValue {
            android.append(("restricted_package_name", .string(package)))
        }
        var keys = members(of: notification, ["icon", "color", "sound", "tag", "click_action"]) { .string(text($0)) }
        if let channel = notification?["android_channel_id"] { keys.append(("channel_id", .string(text(channel)))) }
        for prefix in ["body", "title"] {
            keys += members(of: notification, [prefix + "_loc_key"]) { .string(text($0)) }
            keys += members(of: notification, [prefix + "_loc_args"], locArgs)
        }
        if !keys.isEmpty { android.append(("notification", .object(keys))) }
        return .object(android)
    }

    /// `apns-priority` (10 for high, 5 for normal), `apns-expiration` (when the remaining TTL ends; 0 for a TTL of
    /// 0, APNs' "deliver now or never"), `apns-collapse-id`, and `aps` from the legacy iOS keys.
    private static func apns(
        _ stored: JSON, notification: JSON?, alert: [(key: String, value: JSON)], remaining: Int, now: Int64
    ) -> JSON {
        var headers: [(key: String, value: JSON)] = []
        if let priority = stored["priority"]?.stringValue {
            headers.append(("apns-priority", .string(Priority(rawValue: priority) == .high ? "10" : "5")))
        }
        let expiration = remaining == 0 ? 0 : now / 1000 + Int64(remaining)
        headers.append(("apns-expiration", .string(String(expiration))))
        if let collapseKey = stored["collapse_key"]?.stringValue,
           collapseKey.utf8.count <= maximumAPNsCollapseIDBytes {
            headers.append(("apns-collapse-id", .string(collapseKey)))
        }
        var aps: [(key: String, value: JSON)] = []
        if let badge = notification?["badge"].flatMap(badgeNumber) { aps.append(("badge", .int(badge))) }
        if let sound = notification?["sound"] { aps.append(("sound", .string(text(sound)))) }
        if let category = notification?["click_action"] { aps.append(("category", .string(text(category)))) }
        if stored["content_available"]?.boolValue == true { aps.append(("content-available", .int(1))) }
        if stored["mutable_content"]?.boolValue == true { aps.append(("mutable-content", .int(1))) }
        if let subtitle = notification?["subtitle"] {
            // An `alert` dictionary is the whole alert on iOS: it repeats the title and body beside the subtitle.
            aps.append(("alert", .object(alert + [("subtitle", .string(text(subtitle)))])))
        }
        var apns: [(key: String, value: JSON)] = [("headers", .object(headers))]
        if !aps.isEmpty { apns.append(("payload", .object([("aps", .object(aps))]))) }
        return .object(apns)
    }

    // MARK: - Values

    /// v1 wants strings where legacy took any JSON: a string as itself, anything else as its JSON text.
    public static func text(_ value: JSON) -> String {
        if case .string(let string) = value { return string }
        return value.serialized()
    }

    /// Legacy's `*_loc_args` is a JSON array, or a string holding one; v1 wants an array of strings.
    private static func locArgs(_ value: JSON) -> JSON {
        var items: [JSON]
        switch value {
        case .array(let array): items = array
        case .string(let string):
            if case .array(let array)? = try? JSON.parse(Array(string.utf8)) { items = array } else { items = [value] }
        default: items = [value]
        }
        return .array(items.map { .string(text($0)) })
    }

    /// Legacy sent the iOS badge as a string; APNs wants a number. A badge that is no whole number is left out.
    private static func badgeNumber(_ value: JSON) -> Int64? {
        if let number = value.int64Value { return number }
        return value.stringValue.flatMap { Int64($0) }
    }

    private static func members(
        of object: JSON?, _ keys: [String], _ transform: (JSON) -> JSON
    ) -> [(key: String, value: JSON)] {
        guard let object else { return [] }
        return keys.compactMap { key in object[key].map { (key, transform($0)) } }
    }
}
