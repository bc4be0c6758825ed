import Foundation
import Ingest
import OAuth
import Testing

@testable import WebPushCrypto

/// RFC 8291's message encryption: the RFC's own example byte for byte, round trips, the size limit, and the
/// refusals of bad subscription keys and of bodies that are not what they claim.
@Suite struct WebPushEncryptionTests {
    /// RFC 8291 §5 and Appendix A, as published (the base64url lines joined).
    enum RFC8291 {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
        static let receiverPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcx"
            + "aOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let senderPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIg"
            + "Dll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let ecdhSecret = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"
        static let contentKey = "oIhVW04MRdy2XN9CiKLxTg"
        static let nonce = "4h_95klXJ5E_qnoN"
        static let body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml"
            + "mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT"
            + "pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    static func bytes(_ base64url: String) -> [UInt8] { Base64URL.decode(base64url)! }

    let receiver = try! P256PrivateKey(rawScalar: bytes(RFC8291.receiverPrivate))
    let sender = try! P256PrivateKey(rawScalar: bytes(RFC8291.senderPrivate))
    let keys = try! WebPushKeys(p256dh: RFC8291.receiverPublic, auth: RFC8291.authSecret)

    // MARK: - RFC 8291's example

    @Test func theRFCsKeysHaveTheRFCsPublicPoints() throws {
        #expect(receiver.publicKey.uncompressedPoint == Self.bytes(RFC8291.receiverPublic))
        #expect(sender.publicKey.uncompressedPoint == Self.bytes(RFC8291.senderPublic))
        #expect(try sender.sharedSecret(with: keys.p256dh) == Self.bytes(RFC8291.ecdhSecret))
        #expect(try receiver.sharedSecret(with: Self.bytes(RFC8291.senderPublic)) == Self.bytes(RFC8291.ecdhSecret))
    }

    @Test func theIntermediateKeyAndNonceAreTheRFCs() throws {
        let (key, nonce) = try WebPushEncryption.contentKeyAndNonce(
            secret: Self.bytes(RFC8291.ecdhSecret), auth: keys.auth, receiverPublic: keys.p256dh,
            senderPublic: Self.bytes(RFC8291.senderPublic), salt: Self.bytes(RFC8291.salt))
        #expect(Base64URL.encode(key) == RFC8291.contentKey)
        #expect(Base64URL.encode(nonce) == RFC8291.nonce)
    }

    @Test func theRFCsMessageEncryptsToTheRFCsBodyByteForByte() throws {
        let body = try WebPushEncryption.encrypt(
            Array(RFC8291.plaintext.utf8), to: keys, salt: Self.bytes(RFC8291.salt), ephemeral: sender)
        #expect(Base64URL.encode(body) == RFC8291.body)
        #expect(body.count == 86 + 41 + 1 + 16)
    }

    @Test func theRFCsBodyDecryptsToItsPlaintext() throws {
        let plaintext = try WebPushEncryption.decrypt(
            Self.bytes(RFC8291.body), privateKey: receiver, auth: Self.bytes(RFC8291.authSecret))
        #expect(String(decoding: plaintext, as: UTF8.self) == RFC8291.plaintext)
    }

    // MARK: - Round trips and sizes

    @Test(arguments: [0, 1, 41, 1000, WebPushEncryption.maximumPlaintext])
    func aMessageToAGeneratedSubscriberDecryptsBack(length: Int) throws {
        let subscriber = try WebPushSubscriber.generate()
        let plaintext = try SecureRandom.bytes(length)
        let body = try WebPushEncryption.encrypt(plaintext, to: subscriber.keys)
        #expect(body.count == 86 + length + 1 + 16)
        #expect(body[16..<21] == [0x00, 0x00, 0x10, 0x00, 65], "rs 4096, key id of 65 bytes")
        #expect(try WebPushEncryption.decrypt(body, privateKey: subscriber.privateKey, auth: subscriber.keys.auth)
            == plaintext)
    }

    @Test func theLargestPayloadFillsExactlyTheBodyEveryPushServiceAccepts() throws {
        let subscriber = try WebPushSubscriber.generate()
        let body = try WebPushEncryption.encrypt([UInt8](repeating: 0x61, count: 3993), to: subscriber.keys)
        #expect(body.count == 4096)
        #expect(throws: CryptoError(
            "a Web Push payload is 3994 bytes; at most 3993 fit the 4096-byte record every push service accepts",
            detail: "")) {
            try WebPushEncryption.encrypt([UInt8](repeating: 0x61, count: 3994), to: subscriber.keys)
        }
    }

    @Test func eachMessageHasItsOwnSaltAndEphemeralKey() throws {
        let subscriber = try WebPushSubscriber.generate()
        let first = try WebPushEncryption.encrypt(Array("same".utf8), to: subscriber.keys)
        let second = try WebPushEncryption.encrypt(Array("same".utf8), to: subscriber.keys)
        #expect(first[0..<16] != second[0..<16])
        #expect(first[21..<86] != second[21..<86])
        #expect(first[86...] != second[86...])
    }

    @Test func aMessageDoesNotDecryptWithAnotherSubscribersKeysOrAuth() throws {
        let subscriber = try WebPushSubscriber.generate()
        let other = try WebPushSubscriber.generate()
        let body = try WebPushEncryption.encrypt(Array("private".utf8), to: subscriber.keys)
        let refusal = CryptoError(
            "not a Web Push message: it does not decrypt: the AES-GCM tag does not match "
                + "(other keys, or changed bytes)", detail: "")
        #expect(throws: refusal) {
            try WebPushEncryption.decrypt(body, privateKey: other.privateKey, auth: subscriber.keys.auth)
        }
        #expect(throws: refusal) {
            try WebPushEncryption.decrypt(body, privateKey: subscriber.privateKey, auth: other.keys.auth)
        }
    }

    // MARK: - Malformed bodies

    @Test func aTamperedBodyFailsToDecrypt() throws {
        let body = Self.bytes(RFC8291.body)
        for index in [0, 15, 86, 100, body.count - 1] {   // salt, ciphertext, tag
            var tampered = body
            tampered[index] ^= 0x01
            #expect(throws: CryptoError.self, "byte \(index)") {
                try WebPushEncryption.decrypt(tampered, privateKey: receiver, auth: keys.auth)
            }
        }
        var otherSender = body
        otherSender.replaceSubrange(21..<86, with: try WebPushSubscriber.generate().keys.p256dh)
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.decrypt(otherSender, privateKey: receiver, auth: keys.auth)
        }
    }

    @Test func malformedBodiesAreRefusedWithTheirReason() throws {
        let body = Self.bytes(RFC8291.body)
        func refusal(_ body: [UInt8]) -> String {
            do {
                _ = try WebPushEncryption.decrypt(body, privateKey: receiver, auth: keys.auth)
                return "decrypted"
            } catch {
                return error.description
            }
        }
        #expect(refusal(Array(body.prefix(10))) == "not a Web Push message: 10 bytes, shorter than an aes128gcm header")
        #expect(refusal(Array(body.prefix(60)))
            == "not a Web Push message: 60 bytes, shorter than its 86-byte header")
        #expect(refusal(Array(body.prefix(95)))
            == "not a Web Push message: its record of 9 bytes is too short for the tag and padding delimiter")
        var keyID = body
        keyID[20] = 33
        #expect(refusal(keyID)
            == "not a Web Push message: its key id is 33 bytes; Web Push's is the sender's 65-byte P-256 point")
        var offCurve = body
        offCurve[85] ^= 0x01
        #expect(refusal(offCurve) == "not a Web Push message: its key id is not an uncompressed point on P-256")
        var smallRecords = body
        smallRecords.replaceSubrange(16..<20, with: [0, 0, 0, 32])
        #expect(refusal(smallRecords) == "not a Web Push message: it holds more than one record (58 bytes after "
            + "the header, record size 32); Web Push uses one")
        var tinyRecords = body
        tinyRecords.replaceSubrange(16..<20, with: [0, 0, 0, 17])
        #expect(refusal(tinyRecords) == "not a Web Push message: its record size 17 is below the minimum of 18")
        #expect(throws: CryptoError("a Web Push auth secret is 16 bytes, not 15", detail: "")) {
            try WebPushEncryption.decrypt(body, privateKey: receiver, auth: Array(keys.auth.prefix(15)))
        }
    }

    @Test func aRecordWithoutTheLastRecordsDelimiterIsRefused() throws {
        // Sealed by hand with the RFC's keys: the same plaintext ended by 0x01 (a record that is not the last),
        // then by zeros alone.
        let (key, nonce) = try WebPushEncryption.contentKeyAndNonce(
            secret: Self.bytes(RFC8291.ecdhSecret), auth: keys.auth, receiverPublic: keys.p256dh,
            senderPublic: Self.bytes(RFC8291.senderPublic), salt: Self.bytes(RFC8291.salt))
        let header = Array(Self.bytes(RFC8291.body).prefix(86))
        for (trailer, reason) in [([UInt8(1), 0, 0], "its padding delimiter is 1, not 2 (the last record's)"),
                                  ([0, 0], "its record has no padding delimiter")] {
            var body = header
            let plaintext = trailer == [0, 0] ? [] : Array(RFC8291.plaintext.utf8)
            try AESGCM.seal(plaintext, trailer: trailer, key: key, nonce: nonce, appendingTo: &body)
            #expect(throws: CryptoError("not a Web Push message: \(reason)", detail: "")) {
                try WebPushEncryption.decrypt(body, privateKey: receiver, auth: keys.auth)
            }
        }
        // Padding zeros after the delimiter are allowed (RFC 8188 §2).
        var padded = header
        try AESGCM.seal(Array("hi".utf8), trailer: [2, 0, 0, 0], key: key, nonce: nonce, appendingTo: &padded)
        #expect(try WebPushEncryption.decrypt(padded, privateKey: receiver, auth: keys.auth) == Array("hi".utf8))
    }

    // MARK: - Subscription keys

    @Test func keysReadPaddedAndUnpaddedBase64URLAndWriteItUnpadded() throws {
        let padded = try WebPushKeys(p256dh: RFC8291.receiverPublic + "=", auth: RFC8291.authSecret + "==")
        #expect(padded == keys)
        #expect(padded.p256dhText == RFC8291.receiverPublic)
        #expect(padded.authText == RFC8291.authSecret)
        #expect(keys.p256dh.count == 65 && keys.auth.count == 16)
    }

    @Test func badSubscriptionKeysAreRefusedInWords() throws {
        let point = Self.bytes(RFC8291.receiverPublic)
        let auth = Self.bytes(RFC8291.authSecret)
        func refusal(_ p256dh: [UInt8], _ auth: [UInt8]) -> String? {
            do {
                _ = try WebPushKeys(p256dh: p256dh, auth: auth)
                return nil
            } catch {
                return error.description
            }
        }
        let notAKey = "keys.p256dh is not a P-256 public key (65-byte uncompressed point)"
        #expect(refusal(Array(point.prefix(64)), auth) == notAKey + ": it has 64 bytes")
        #expect(refusal(point + [0], auth) == notAKey + ": it has 66 bytes")
        #expect(refusal([], auth) == notAKey + ": it has 0 bytes")
        let compressed = [0x02 | (point[64] & 1)] + point[1...32]
        #expect(refusal(compressed, auth) == notAKey + ": it is a compressed point")
        #expect(refusal([0x05] + point.dropFirst(), auth) == notAKey + ": it does not start with 0x04")
        var offCurve = point
        offCurve[64] ^= 0x01
        #expect(refusal(offCurve, auth) == notAKey + ": the point is not on the curve")
        let beyondTheField = [0x04] + [UInt8](repeating: 0xff, count: 64)
        #expect(refusal(beyondTheField, auth) == notAKey + ": the point is not on the curve")
        #expect(refusal(point, Array(auth.prefix(15))) == "keys.auth must be 16 bytes, not 15")
        #expect(refusal(point, auth + [0]) == "keys.auth must be 16 bytes, not 17")
        #expect(throws: WebPushKeys.Invalid("keys.p256dh is not base64url")) {
            try WebPushKeys(p256dh: "BCVxsr7N+eNgVRqv", auth: RFC8291.authSecret)
        }
        #expect(throws: WebPushKeys.Invalid("keys.auth is not base64url")) {
            try WebPushKeys(p256dh: RFC8291.receiverPublic, auth: "BTBZ MqHH6r4Tts7J_aSIgg")
        }
        #expect(throws: WebPushKeys.Invalid("keys.auth is not base64url")) {
            try WebPushKeys(p256dh: RFC8291.receiverPublic, auth: "BTBZMqHH6r4Tts7J_aSIgg===")
        }
    }

    @Test func aRawScalarMustBeAP256PrivateKey() throws {
        let refusal = CryptoError(
            "not a P-256 private key (a 32-byte scalar from 1 to the group order less one)", detail: "")
        #expect(throws: refusal) { try P256PrivateKey(rawScalar: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: refusal) { try P256PrivateKey(rawScalar: [UInt8](repeating: 0xff, count: 32)) }
        #expect(throws: refusal) { try P256PrivateKey(rawScalar: [1]) }
        // A key from a scalar signs like any other and survives a PEM round trip.
        let again = try P256PrivateKey(pem: receiver.pkcs8PEM())
        #expect(again.publicKey.uncompressedPoint == receiver.publicKey.uncompressedPoint)
        let message = Array("header.claims".utf8)
        #expect(receiver.publicKey.verifyES256(try again.signES256(message), of: message))
    }

    @Test func aPeerThatIsNotAPointIsRefusedForECDH() throws {
        #expect(throws: CryptoError("not a P-256 public key (65-byte uncompressed point)", detail: "")) {
            try receiver.sharedSecret(with: Array(Self.bytes(RFC8291.senderPublic).prefix(33)))
        }
    }
}
