import OAuth

/// A browser's Web Push subscription keys — `PushSubscription.toJSON().keys` — checked: `p256dh` is the browser's
/// P-256 public key as a 65-byte uncompressed point on the curve, `auth` its 16-byte authentication secret.
///
/// ```swift
/// let keys = try WebPushKeys(p256dh: json["p256dh"], auth: json["auth"])
/// let body = try WebPushEncryption.encrypt(Array(payload.utf8), to: keys)
/// ```
///
/// Both are base64url (RFC 4648 §5), as the Push API gives them; trailing `=` padding is accepted too.
public struct WebPushKeys: Sendable, Equatable {
    /// 0x04 ‖ x ‖ y, 65 bytes, on P-256.
    public let p256dh: [UInt8]
    /// 16 bytes.
    public let auth: [UInt8]

    public static let authLength = 16

    /// Keys from their base64url text (padded or not).
    public init(p256dh: String, auth: String) throws(WebPushKeys.Invalid) {
        guard let point = Self.decode(p256dh) else { throw Invalid("keys.p256dh is not base64url") }
        guard let secret = Self.decode(auth) else { throw Invalid("keys.auth is not base64url") }
        try self.init(p256dh: point, auth: secret)
    }

    public init(p256dh: [UInt8], auth: [UInt8]) throws(WebPushKeys.Invalid) {
        let refusal = "keys.p256dh is not a P-256 public key (65-byte uncompressed point)"
        if p256dh.count == 33, p256dh.first == 0x02 || p256dh.first == 0x03 {
            throw Invalid(refusal + ": it is a compressed point")
        }
        guard p256dh.count == P256Curve.uncompressedPointLength else {
            throw Invalid(refusal + ": it has \(p256dh.count) bytes")
        }
        guard p256dh.first == 0x04 else { throw Invalid(refusal + ": it does not start with 0x04") }
        guard P256Point(uncompressed: p256dh) != nil else { throw Invalid(refusal + ": the point is not on the curve") }
        guard auth.count == Self.authLength else {
            throw Invalid("keys.auth must be \(Self.authLength) bytes, not \(auth.count)")
        }
        self.p256dh = p256dh
        self.auth = auth
    }

    /// `p256dh` as base64url without padding, as the Push API writes it.
    public var p256dhText: String { Base64URL.encode(p256dh) }

    /// `auth` as base64url without padding.
    public var authText: String { Base64URL.encode(auth) }

    /// Why a subscription's keys were refused, in words for the API's caller (never the key material itself).
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    private static func decode(_ text: String) -> [UInt8]? {
        var unpadded = Substring(text)
        for _ in 0..<2 where unpadded.hasSuffix("=") { unpadded.removeLast() }
        return Base64URL.decode(unpadded)
    }
}
