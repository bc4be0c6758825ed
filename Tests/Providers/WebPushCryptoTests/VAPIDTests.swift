import Foundation
import OAuth
import Support
import Testing

@testable import WebPushCrypto

/// RFC 8292's VAPID header: its shape, the JWT's signature and claims, the per-origin cache and its renewal, and
/// the subject's check.
@Suite struct VAPIDTests {
    let key = try! P256PrivateKey.generate()
    let subject = "mailto:ops@example.com"
    /// 2024-11-21T12:00:00Z in Unix milliseconds.
    let now: Int64 = 1_732_190_400_000

    /// The header's token and key, split as a push service splits them.
    func parse(_ header: String) throws -> (token: String, key: String) {
        #expect(header.hasPrefix("vapid "))
        var fields: [String: String] = [:]
        for field in header.dropFirst("vapid ".count).split(separator: ",") {
            let trimmed = field.trimmingCharacters(in: .whitespaces)
            let equals = try #require(trimmed.firstIndex(of: "="))
            fields[String(trimmed[..<equals])] = String(trimmed[trimmed.index(after: equals)...])
        }
        #expect(Set(fields.keys) == ["t", "k"])
        return (try #require(fields["t"]), try #require(fields["k"]))
    }

    @Test func theHeaderCarriesAnES256TokenForTheOriginAndThePublicKey() throws {
        let vapid = try VAPID(key: key, subject: subject)
        let (token, publicKey) = try parse(try vapid.authorization(origin: "https://fcm.googleapis.com", now: now))
        #expect(publicKey == vapid.publicKeyText)
        #expect(Base64URL.decode(publicKey) == key.publicKey.uncompressedPoint)
        let decoded = try JWT.verifyES256(token, with: key.publicKey)
        #expect(decoded.header == JSON.object([("alg", "ES256"), ("typ", "JWT")]))
        #expect(decoded.claims["aud"]?.stringValue == "https://fcm.googleapis.com")
        #expect(decoded.claims["sub"]?.stringValue == subject)
        let expiresAt = try #require(decoded.claims["exp"]?.int64Value)
        #expect(expiresAt == now / 1000 + 12 * 3600)
        #expect(expiresAt - now / 1000 <= 24 * 3600, "RFC 8292 §2: no more than 24 hours ahead")
        #expect(throws: JWT.Invalid("Invalid JWT Signature.")) {
            try JWT.verifyES256(token, with: try P256PrivateKey.generate().publicKey)
        }
    }

    @Test func theHeaderIsReusedForAnOriginUntilAnHourOfItsLifeRemains() throws {
        let vapid = try VAPID(key: key, subject: subject)
        let first = try vapid.authorization(origin: "https://fcm.googleapis.com", now: now)
        #expect(try vapid.authorization(origin: "https://fcm.googleapis.com", now: now + 1000) == first)
        let elevenHoursLater = now + 11 * 3600 * 1000 - 1000
        #expect(try vapid.authorization(origin: "https://fcm.googleapis.com", now: elevenHoursLater) == first)

        let renewed = try vapid.authorization(origin: "https://fcm.googleapis.com", now: now + 11 * 3600 * 1000)
        #expect(renewed != first)
        let claims = try JWT.verifyES256(try parse(renewed).token, with: key.publicKey).claims
        #expect(claims["exp"]?.int64Value == now / 1000 + 23 * 3600)
        #expect(try vapid.authorization(origin: "https://fcm.googleapis.com", now: now + 11 * 3600 * 1000 + 5)
            == renewed)
    }

    @Test func anotherOriginGetsItsOwnToken() throws {
        let vapid = try VAPID(key: key, subject: subject)
        let google = try vapid.authorization(origin: "https://fcm.googleapis.com", now: now)
        let mozilla = try vapid.authorization(origin: "https://updates.push.services.mozilla.com", now: now)
        #expect(google != mozilla)
        let claims = try JWT.verifyES256(try parse(mozilla).token, with: key.publicKey).claims
        #expect(claims["aud"]?.stringValue == "https://updates.push.services.mozilla.com")
        #expect(try vapid.authorization(origin: "https://fcm.googleapis.com", now: now + 60_000) == google)
        #expect(vapid.cachedOrigins == 2)
    }

    @Test func aClockSetBackDoesNotReuseATokenThatWouldLookTooLongLived() throws {
        let vapid = try VAPID(key: key, subject: subject)
        let first = try vapid.authorization(origin: "https://fcm.googleapis.com", now: now)
        let earlier = try vapid.authorization(origin: "https://fcm.googleapis.com", now: now - 3600 * 1000)
        #expect(earlier != first)
        let claims = try JWT.verifyES256(try parse(earlier).token, with: key.publicKey).claims
        #expect(claims["exp"]?.int64Value == now / 1000 + 11 * 3600)
    }

    @Test func theCacheForgetsOriginsIdleForADayAndStaysBounded() throws {
        let vapid = try VAPID(key: key, subject: subject)
        _ = try vapid.authorization(origin: "https://a.example", now: now)
        _ = try vapid.authorization(origin: "https://b.example", now: now + 23 * 3600 * 1000)
        _ = try vapid.authorization(origin: "https://c.example", now: now + 25 * 3600 * 1000)
        #expect(vapid.cachedOrigins == 2, "a.example, unused for 25 hours, is forgotten")

        let later = now + 26 * 3600 * 1000
        for index in 0..<VAPID.maximumCachedOrigins + 10 {
            _ = try vapid.authorization(origin: "https://\(index).push.example", now: later + Int64(index))
        }
        #expect(vapid.cachedOrigins == VAPID.maximumCachedOrigins)
    }

    @Test func concurrentCallersShareTheCache() async throws {
        let vapid = try VAPID(key: key, subject: subject)
        let now = self.now
        let headers = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<64 {
                group.addTask { try vapid.authorization(origin: "https://\(index % 4).example", now: now) }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(headers.count == 64)
        #expect(vapid.cachedOrigins == 4)
        for header in headers {
            #expect(try JWT.verifyES256(try parse(header).token, with: key.publicKey).claims["exp"] != nil)
        }
    }

    @Test(arguments: ["mailto:ops@example.com", "https://example.com", "https://example.com/contact", "MAILTO:a@b"])
    func aMailtoOrHTTPSSubjectIsAccepted(subject: String) throws {
        _ = try VAPID(key: key, subject: subject)
    }

    @Test(arguments: ["", "ops@example.com", "mailto:", "mailto:ops", "mailto: ops@example.com", "http://example.com",
                      "https://", "https://exa mple.com", "tel:+1555"])
    func anyOtherSubjectIsRefused(subject: String) throws {
        #expect(throws: VAPID.Invalid(#"vapid_subject must be a "mailto:" address or an "https://" URL "#
            + "(RFC 8292 §2.1), not \"\(subject)\"")) {
            try VAPID(key: key, subject: subject)
        }
    }

    @Test func thePublicKeyTextIsTheApplicationServerKey() throws {
        let vapid = try VAPID(key: key, subject: subject)
        #expect(!vapid.publicKeyText.contains("="))
        #expect(Base64URL.decode(vapid.publicKeyText) == key.publicKey.uncompressedPoint)
        #expect(vapid.publicKeyText.count == 87)
    }
}
