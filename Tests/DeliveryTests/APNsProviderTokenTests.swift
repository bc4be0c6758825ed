@testable import Delivery
import OAuth
import Support
import Testing

private let t0: Int64 = 1_700_000_000_000

/// The provider token's life (SPEC §15): reused for 40 minutes, renewed once when Apple calls it expired, kept
/// longer when Apple says it is renewed too often — and always a JWT the key's public half verifies.
@Suite struct APNsProviderTokenTests {
    let key = try! P256PrivateKey.generate()

    @Test func oneTokenServesFortyMinutesThenANewOne() throws {
        let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = try tokens.current(now: t0)
        #expect(try tokens.current(now: t0 + 39 * 60_000) == first)
        let second = try tokens.current(now: t0 + 40 * 60_000)
        #expect(second != first)
        let decoded = try JWT.verifyES256(second, with: key.publicKey)
        #expect(decoded.header["kid"]?.stringValue == "ABC123DEFG")
        #expect(decoded.claims["iss"]?.stringValue == "TEAM123456")
        #expect(decoded.claims["iat"]?.int64Value == (t0 + 40 * 60_000) / 1000)
    }

    @Test func anExpiredTokenIsRenewedOnceAndTheRenewalRefusedAgainPauses() throws {
        let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = try tokens.current(now: t0)
        #expect(tokens.mayRenew(first))
        #expect(tokens.expired(first, now: t0 + 1_000))
        let renewed = try tokens.current(now: t0 + 1_000)
        #expect(renewed != first)
        // Answers to other requests sent with the first token: the renewal is already there to retry with.
        #expect(tokens.expired(first, now: t0 + 2_000))
        #expect(try tokens.current(now: t0 + 2_000) == renewed)
        #expect(!tokens.mayRenew(renewed))
        #expect(!tokens.expired(renewed, now: t0 + 3_000))
    }

    @Test func tooManyUpdatesKeepsTheTokenLonger() throws {
        let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = try tokens.current(now: t0)
        tokens.renewedTooOften(now: t0 + 60_000)
        #expect(try tokens.current(now: t0 + 50 * 60_000) == first)
        #expect(try tokens.current(now: t0 + 55 * 60_000) != first)
    }
}
