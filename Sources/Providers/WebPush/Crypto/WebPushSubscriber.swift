import Ingest
import OAuth

/// A browser's side of a Web Push subscription — its key pair and authentication secret — for the simulator's push
/// service and for tests: `keys` is what the browser would hand the application server, `privateKey` what decrypts.
public struct WebPushSubscriber: Sendable {
    public let privateKey: P256PrivateKey
    public let keys: WebPushKeys

    /// A new random key pair and auth secret.
    public static func generate() throws(CryptoError) -> WebPushSubscriber {
        let privateKey = try P256PrivateKey.generate()
        let auth = try SecureRandom.bytes(WebPushKeys.authLength)
        guard let keys = try? WebPushKeys(p256dh: privateKey.agreement.publicPoint, auth: auth) else {
            throw CryptoError("a generated P-256 key was refused as Web Push keys", detail: "")
        }
        return WebPushSubscriber(privateKey: privateKey, keys: keys)
    }
}
