import Delivery
import OAuth
import Queue
import Support

/// One Web Push message rendered from a stored message (SPEC §16), before it is encrypted to each subscription:
/// the plaintext JSON a service worker's `push` event reads, and the `TTL`, `Urgency` and `Topic` headers.
///
/// The payload is `{"notification": {...}, "data": {...}, "link": "…"}`, each member only when there is one: the
/// common `notification` and `data` with the v1 `webpush` block's over them, and `webpush.fcm_options.link` (a
/// legacy message: its `notification` and `data`, and `click_action` as the link).
///
/// ```swift
/// let rendered = try WebPushNotification.render(message, now: now)
/// // rendered.plaintext: {"notification":{"title":"Hi","body":"there"},"data":{"order":"42"}}
/// // rendered.headers: [("ttl", "3600"), ("urgency", "high"), ("topic", "order-42")]
/// ```
struct WebPushNotification: Equatable {
    var plaintext: [UInt8]
    var headers: [(name: String, value: String)]

    static func == (lhs: WebPushNotification, rhs: WebPushNotification) -> Bool {
        lhs.plaintext == rhs.plaintext
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// One aes128gcm record of 4096 bytes holds this much plaintext (RFC 8291 §4).
    static let maximumPlaintextBytes = 3993

    /// Why a message cannot go out over Web Push: a dead letter for the whole message, never a retry.
    struct Unrenderable: Error, Equatable {
        var reason: DeliveryReason
    }

    static func render(_ message: ClaimedMessage, now: Int64) throws(Unrenderable) -> WebPushNotification {
        let stored = (try? JSON.parse(Array(message.payload.utf8))) ?? .object([])
        let webpush = message.format == .v1 ? stored["webpush"] : nil
        var payload: [(key: String, value: JSON)] = []
        let notification = merged(stored["notification"], webpush?["notification"])
        if !notification.isEmpty { payload.append(("notification", .object(notification))) }
        let data = merged(stored["data"], webpush?["data"])
        if !data.isEmpty { payload.append(("data", .object(data))) }
        let link = message.format == .v1
            ? webpush?["fcm_options"]?["link"]?.stringValue
            : stored["notification"]?["click_action"]?.stringValue
        if let link { payload.append(("link", .string(link))) }
        var plaintext: [UInt8] = []
        JSON.object(payload).append(to: &plaintext)
        guard plaintext.count <= maximumPlaintextBytes else { throw Unrenderable(reason: .messageTooBig) }

        let given = webpush?["headers"]?.objectValue ?? []
        func header(_ name: String) -> String? {
            given.first { $0.key.lowercased() == name }?.value.stringValue
        }
        var headers: [(name: String, value: String)] = [
            ("ttl", String(message.remainingTTL(now: now))),
            ("urgency", header("urgency") ?? (isHigh(stored, format: message.format) ? "high" : "normal")),
        ]
        // A collapse key that is not a valid `Topic` is left out rather than refused by the push service.
        if let topic = header("topic") ?? message.collapseKey, Base64URL.isWebPushTopic(topic) {
            headers.append(("topic", topic))
        }
        return WebPushNotification(plaintext: plaintext, headers: headers)
    }

    /// `base`'s members with `over`'s replacing or added, in `base`'s order then `over`'s new ones.
    private static func merged(_ base: JSON?, _ over: JSON?) -> [(key: String, value: JSON)] {
        var members = base?.objectValue ?? []
        for member in over?.objectValue ?? [] {
            if let index = members.firstIndex(where: { $0.key == member.key }) {
                members[index].value = member.value
            } else {
                members.append(member)
            }
        }
        return members
    }

    /// High priority as the message says it: legacy `priority`, v1 `android.priority` or `apns-priority` 10.
    private static func isHigh(_ stored: JSON, format: MessageFormat) -> Bool {
        switch format {
        case .legacy:
            stored["priority"]?.stringValue.flatMap(Priority.init(rawValue:)) == .high
        case .v1:
            stored["android"]?["priority"]?.stringValue?.uppercased() == "HIGH"
                || stored["apns"]?["headers"]?["apns-priority"]?.stringValue == "10"
        }
    }
}
