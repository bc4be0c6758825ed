import Delivery
import Queue
import Support

/// An FCM HTTP v1 message mapped down to FCM legacy fields (SPEC §13: the §12 mapping, reversed), for a v1-shaped
/// message queued for a legacy app.
///
/// Ingest refuses what legacy cannot express (an `fid` target, `webpush`), so what is left maps field by field:
///
/// | v1 | legacy |
/// |---|---|
/// | `data`, then `android.data` (Android's wins, as on a device) | `data` |
/// | `notification{title, body, image}`, `android.notification{…}`, | `notification{…}` (`channel_id` → |
/// | `apns.payload.aps{badge, sound, category, alert.subtitle}` | `android_channel_id`, `category` → `click_action`) |
/// | `android.collapse_key`, else `apns-collapse-id` | `collapse_key` |
/// | `android.priority`, else `apns-priority` (10 = high) | `priority` |
/// | `android.restricted_package_name` | `restricted_package_name` |
/// | `aps.content-available`, `aps.mutable-content` = 1 | `content_available`, `mutable_content` |
///
/// `time_to_live` (the remaining TTL) and `dry_run` (from `validate_only`) are set by the sender. `fcm_options` and
/// other APNs headers have no legacy place and are left out.
enum LegacyMessage {
    private static let androidNotificationKeys = [
        "title", "body", "icon", "color", "sound", "tag", "click_action", "body_loc_key", "body_loc_args",
        "title_loc_key", "title_loc_args",
    ]

    static func members(fromV1 message: JSON) -> [(key: String, value: JSON)] {
        var fields = Fields()
        let android = message["android"]
        let apns = message["apns"]
        let aps = apns?["payload"]?["aps"]
        let headers = apns?["headers"]

        if let collapseKey = android?["collapse_key"] ?? headers?["apns-collapse-id"] {
            fields.set("collapse_key", collapseKey)
        }
        if let priority = android?["priority"]?.stringValue {
            fields.set("priority", .string(priority.lowercased() == "high" ? "high" : "normal"))
        } else if let priority = headers?["apns-priority"]?.stringValue {
            fields.set("priority", .string(priority == "10" ? "high" : "normal"))
        }
        if let package = android?["restricted_package_name"] { fields.set("restricted_package_name", package) }
        if aps?["content-available"]?.int64Value == 1 { fields.set("content_available", .bool(true)) }
        if aps?["mutable-content"]?.int64Value == 1 { fields.set("mutable_content", .bool(true)) }

        var data = Fields()
        for source in [message["data"], android?["data"]] {
            for entry in source?.objectValue ?? [] { data.set(entry.key, entry.value) }
        }
        if !data.members.isEmpty { fields.set("data", .object(data.members)) }

        var notification = Fields()
        for entry in message["notification"]?.objectValue ?? [] { notification.set(entry.key, entry.value) }
        if let extra = android?["notification"] {
            for key in androidNotificationKeys { if let value = extra[key] { notification.set(key, value) } }
            if let channel = extra["channel_id"] { notification.set("android_channel_id", channel) }
        }
        if let aps {
            if let badge = aps["badge"] { notification.set("badge", .string(V1Message.text(badge))) }
            if let sound = aps["sound"]?.stringValue, notification.value("sound") == nil {
                notification.set("sound", .string(sound))
            }
            if let category = aps["category"], notification.value("click_action") == nil {
                notification.set("click_action", category)
            }
            if let subtitle = aps["alert"]?["subtitle"] { notification.set("subtitle", subtitle) }
        }
        if !notification.members.isEmpty { fields.set("notification", .object(notification.members)) }
        return fields.members
    }

    /// Ordered members where setting a key again replaces its value in place.
    private struct Fields {
        var members: [(key: String, value: JSON)] = []

        func value(_ key: String) -> JSON? { members.first { $0.key == key }?.value }

        mutating func set(_ key: String, _ value: JSON) {
            if let index = members.firstIndex(where: { $0.key == key }) {
                members[index].value = value
            } else {
                members.append((key, value))
            }
        }
    }
}
