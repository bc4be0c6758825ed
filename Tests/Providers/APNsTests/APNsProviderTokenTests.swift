import OAuth
import Support
import Testing

@testable import APNs
@testable import Delivery

private let t0: Int64 = 1_700_000_000_000

/// The provider token's life (SPEC §15): reused for 40 minutes, renewed once when Apple calls it expired, a second
/// refusal before Apple took the renewal pausing the app — and always a JWT the key's public half verifies.
@Suite struct APNsProviderTokenTests {
    let key = try! P256PrivateKey.generate()

    @Test func oneTokenServesFortyMinutesThenANewOne() throws {
        let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = try tokens.token(now: t0)
        #expect(tokens.current(now: t0 + 39 * 60_000) == first)
        let second = try tokens.token(now: t0 + 40 * 60_000)
        #expect(second != first)
        let decoded = try JWT.verifyES256(second, with: key.publicKey)
        #expect(decoded.header["kid"]?.stringValue == "ABC123DEFG")
        #expect(decoded.claims["iss"]?.stringValue == "TEAM123456")
        #expect(decoded.claims["iat"]?.int64Value == (t0 + 40 * 60_000) / 1000)
    }

    @Test func anExpiredTokenIsRenewedOnceAndTheRenewalRefusedAgainPauses() throws {
        let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = try tokens.token(now: t0)
        #expect(tokens.refused(token: first, now: t0 + 1_000) == .renew)
        let renewed = try tokens.token(now: t0 + 1_000)
        #expect(renewed != first)
        // Answers to other requests sent with the first token: the renewal is already there to retry with.
        #expect(tokens.refused(token: first, now: t0 + 2_000) == .stale)
        #expect(tokens.current(now: t0 + 2_000) == renewed)
        #expect(tokens.refused(token: renewed, now: t0 + 3_000) == .pause)
    }

    @Test func aRenewalThatAppleTookMayBeRenewedAgainLater() throws {
        let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = try tokens.token(now: t0)
        #expect(tokens.refused(token: first, now: t0) == .renew)
        let renewed = try tokens.token(now: t0)
        #expect(tokens.accepted(token: first), "an answer to the old token proves nothing")
        #expect(!tokens.accepted(token: renewed))
        #expect(tokens.refused(token: renewed, now: t0 + 60_000) == .renew)
    }

    @Test func tooManyUpdatesKeepsTheTokenAndEveryLaterOneFiftyFiveMinutes() throws {
        let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
        let first = try tokens.token(now: t0)
        tokens.renewedTooOften(now: t0 + 60_000)
        #expect(tokens.current(now: t0 + 54 * 60_000) == first, "kept past the usual 40 minutes")
        let second = try tokens.token(now: t0 + 55 * 60_000)
        #expect(second != first)
        #expect(tokens.current(now: t0 + 55 * 60_000 + 54 * 60_000) == second, "later tokens live as long")
    }
}
