import Delivery
import Queue
import Support

/// One APNs request rendered from a stored message (SPEC §15): the `apns-*` headers and the JSON body.
///
/// The message's v1 shape is the source (a legacy-shaped message is mapped to it first, `V1Message.fields`): its
/// `apns.headers` go out as headers and its `apns.payload` as the body, as FCM itself would send them to an iPhone;
/// where the `apns` block is silent, the common `notification` fills `aps.alert` and `data` becomes custom
/// top-level keys. Herald sets what the queue knows: `apns-expiration` (when the remaining TTL ends; `0` for TTL 0),
/// `apns-topic` (the app's bundle id, with the push type's suffix), and defaults for `apns-push-type` and
/// `apns-priority` that agree with the payload.
///
/// ```swift
/// let rendered = try APNsNotification.render(message, topic: "com.example.app", now: now)
/// // rendered.headers: [("apns-push-type", "alert"), ("apns-priority", "10"), ("apns-expiration", "1700003600"),
/// //                    ("apns-topic", "com.example.app")]
/// // rendered.body: {"aps":{"alert":{"title":"Hi","body":"there"}},"order":"42"}
/// ```
struct APNsNotification: Equatable {
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    static func == (lhs: APNsNotification, rhs: APNsNotification) -> Bool {
        lhs.body == rhs.body && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// APNs refuses bodies over these (`PayloadTooLarge`).
    static let maximumBodyBytes = 4096
    static let maximumVoIPBodyBytes = 5120

    /// Why a message cannot go to APNs: a dead letter for the whole message, never a retry.
    struct Unrenderable: Error, Equatable {
        var reason: DeliveryReason
    }

    static func render(_ message: ClaimedMessage, topic: String, now: Int64) throws(Unrenderable) -> APNsNotification {
        let members: [(key: String, value: JSON)] = switch message.format {
        case .v1: (try? JSON.parse(Array(message.payload.utf8)))?.objectValue ?? []
        case .legacy: V1Message.fields(for: message, now: now)
        }
        let v1 = JSON.object(members)
        let apns = v1["apns"]
        var headers: [(name: String, value: String)] = []
        for header in apns?["headers"]?.objectValue ?? [] {
            let name = header.key.lowercased()
            // Herald's own: the expiration follows the queue's TTL, the topic the app's configuration.
            guard name != "apns-expiration", name != "apns-topic", let value = header.value.stringValue else {
                continue
            }
            headers.append((name, value))
        }
        let aps = apns?["payload"]?["aps"]
        var payload = apns?["payload"]?.objectValue ?? []
        payload.removeAll { $0.key == "aps" }
        var apsMembers = aps?.objectValue ?? []
        if aps?["alert"] == nil, let notification = v1["notification"] {
            var alert: [(key: String, value: JSON)] = []
            for key in ["title", "body"] { if let value = notification[key] { alert.append((key, value)) } }
            if !alert.isEmpty { apsMembers.insert(("alert", .object(alert)), at: 0) }
        }
        for entry in v1["data"]?.objectValue ?? [] where entry.key != "aps" {
            if !payload.contains(where: { $0.key == entry.key }) { payload.append(entry) }
        }
        let apsObject = JSON.object(apsMembers)

        let pushType = headers.first { $0.name == "apns-push-type" }?.value ?? defaultPushType(apsObject)
        if !headers.contains(where: { $0.name == "apns-push-type" }) {
            headers.insert(("apns-push-type", pushType), at: 0)
        }
        if !headers.contains(where: { $0.name == "apns-priority" }) {
            // Apple refuses priority 10 for a background push.
            headers.append(("apns-priority", pushType == "background" ? "5" : "10"))
        }
        let expiration = message.ttlSeconds == 0 ? 0 : max(1, message.expiresAt / 1000)
        headers.append(("apns-expiration", String(expiration)))
        if !headers.contains(where: { $0.name == "apns-collapse-id" }), let collapseKey = message.collapseKey,
           collapseKey.utf8.count <= V1Message.maximumAPNsCollapseIDBytes {
            headers.append(("apns-collapse-id", collapseKey))
        }
        headers.append(("apns-topic", topic + topicSuffix(pushType)))

        var body: [UInt8] = []
        JSON.object([("aps", apsObject)] + payload).append(to: &body)
        let limit = pushType == "voip" ? maximumVoIPBodyBytes : maximumBodyBytes
        guard body.count <= limit else { throw Unrenderable(reason: .apns(.payloadTooLarge)) }
        return APNsNotification(headers: headers, body: body)
    }

    /// `background` for a silent push (content-available and nothing the user sees), else `alert`.
    private static func defaultPushType(_ aps: JSON) -> String {
        let visible = aps["alert"] != nil || aps["sound"] != nil || aps["badge"] != nil
        return aps["content-available"]?.int64Value == 1 && !visible ? "background" : "alert"
    }

    /// The topic suffix Apple requires for a push type (its `apns-topic` rules).
    private static func topicSuffix(_ pushType: String) -> String {
        switch pushType {
        case "voip": ".voip"
        case "complication": ".complication"
        case "fileprovider": ".pushkit.fileprovider"
        case "location": ".location-query"
        case "liveactivity": ".push-type.liveactivity"
        case "pushtotalk": ".voip-ptt"
        default: ""
        }
    }

    /// The delivery's id as a UUID, Apple's `apns-id`: the same for every attempt of one delivery, so Apple (and
    /// its logs) can tell a retry from a new notification.
    static func apnsID(delivery id: Int64) -> String {
        // 64 bits fit the 18 hex digits a version-4 UUID leaves after its fixed version and variant digits.
        let hex = String(UInt64(bitPattern: id), radix: 16)
        let digits = Array(String(repeating: "0", count: 18 - hex.count) + hex)
        return "00000000-0000-4" + String(digits[0..<3]) + "-8" + String(digits[3..<6]) + "-"
            + String(digits[6..<18])
    }
}
