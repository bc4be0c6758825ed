import Foundation
import Ingest
import OAuth
import Support
import Testing
import WebPushCrypto

/// Herald's Web Push cryptography against independent implementations from PyPI, in the venv `scripts/python-sdks`
/// makes: `http_ece` (Mozilla's implementation of the aes128gcm content coding) decrypts what
/// `WebPushEncryption.encrypt` makes and encrypts what `WebPushEncryption.decrypt` must read, and `py_vapid` (with
/// the `cryptography` package directly) verifies the ES256 token and claims of `VAPID.authorization`.
/// `scripts/webpush_interop.py` does the Python side. Like the SDK test, it fails rather than skips without PyPI.
@Suite struct WebPushInteropTests {
    @Test func httpECEAndPyVAPIDAcceptHeraldsMessagesAndHeaders() throws {
        let python = try PythonSDKs.python()
        let subscriber = try WebPushSubscriber.generate()
        let plaintexts: [[UInt8]] = [
            [0x7b], Array("When I grow up, I want to be a watermelon".utf8),
            Array(#"{"notification":{"title":"Portugal vs. Denmark","body":"great match! ⚽"}}"#.utf8),
            (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) },
            (0..<WebPushEncryption.maximumPlaintext).map { _ in UInt8.random(in: 0...255) },
            [],
        ]
        let messages: [JSON] = try plaintexts.map { plaintext in
            let body = try WebPushEncryption.encrypt(plaintext, to: subscriber.keys)
            return .object([
                ("plaintext", .string(Base64URL.encode(plaintext))), ("body", .string(Base64URL.encode(body))),
            ])
        }
        let vapid = try VAPID(key: P256PrivateKey.generate(), subject: "mailto:ops@example.com")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let origin = try #require(WebPushSubscription.origin(of: "https://fcm.googleapis.com/wp/dGVzdA:APA91b"))
        let authorization = try vapid.authorization(origin: origin, now: now)
        let replies: [[UInt8]] = [Array("from http_ece".utf8), (0..<3993).map { UInt8(truncatingIfNeeded: $0) }]
        let input: JSON = .object([
            ("subscriber", .object([
                ("private_key_pem", .string(subscriber.privateKey.pkcs8PEM())),
                ("p256dh", .string(subscriber.keys.p256dhText)), ("auth", .string(subscriber.keys.authText)),
            ])),
            ("messages", .array(messages)),
            ("vapid", .object([
                ("authorization", .string(authorization)), ("public_key", .string(vapid.publicKeyText)),
                ("audience", .string("https://fcm.googleapis.com")), ("subject", .string("mailto:ops@example.com")),
                ("now", .int(now / 1000)),
            ])),
            ("encrypt", .array(replies.map { .string(Base64URL.encode($0)) })),
        ])
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("webpush-\(UUID().uuidString).json")
        try Data(input.serialized().utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let checked = try PythonSDKs.run(
            python, [PythonSDKs.root.appendingPathComponent("scripts/webpush_interop.py").path, file.path])
        try #require(checked.status == 0, "the Python side refused:\n\(checked.stderr)" as Comment)
        let output = try JSON.parse(Array(checked.stdout.utf8))
        #expect(output["decrypted"]?.int64Value == Int64(plaintexts.count))
        #expect(output["claims"]?["aud"]?.stringValue == "https://fcm.googleapis.com")
        #expect(output["claims"]?["exp"]?.int64Value == now / 1000 + VAPID.tokenLifetime)

        let bodies = try #require(output["bodies"]?.arrayValue?.compactMap { $0.stringValue.flatMap(Base64URL.decode) })
        #expect(bodies.count == replies.count)
        for (body, reply) in zip(bodies, replies) {
            #expect(try WebPushEncryption.decrypt(body, privateKey: subscriber.privateKey, auth: subscriber.keys.auth)
                == reply)
        }
    }
}
