/// FCM's message rules that the sides of both its APIs (legacy and v1) check: kept once in the shell, as the token
/// prefixes are, since two sides share them.
public enum FCMMessageRules {
    /// The longest `time_to_live` (legacy) or `android.ttl` (v1), 28 days in seconds.
    public static let maximumTTL = 2_419_200
    /// The bytes `data` and `notification` may take together, as compact JSON, for a device.
    public static let payloadLimit = 4096
    /// The same for a topic or a condition.
    public static let topicPayloadLimit = 2048

    /// FCM reserves `from`, `message_type`, and keys starting `google` or `gcm`.
    public static func isReservedDataKey(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    /// A topic name is `[a-zA-Z0-9-_.~%]+`.
    public static func isTopicNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-_.~%".utf8.contains(byte)
        }
    }
}
