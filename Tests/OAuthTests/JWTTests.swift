import Foundation
import Support
import Testing

@testable import OAuth

/// One key for the whole suite: generating RSA keys is the slow part.
let testKey = try! RSAPrivateKey.generate(bits: 2048)

@Suite struct JWTTests {
    let claims = JWT.Claims(
        issuer: "herald@test-project.iam.gserviceaccount.com", scope: JWT.firebaseMessagingScope,
        audience: "https://oauth2.googleapis.com/token", issuedAt: 1_700_000_000, lifetime: 3600)

    @Test func headerIsRS256JWT() throws {
        let token = try JWT.sign(claims, with: testKey)
        let decoded = try JWT.decode(token)
        #expect(decoded.header == JSON.object([("alg", "RS256"), ("typ", "JWT")]))
    }

    @Test func claimsAreTheServiceAccountFlowsFive() throws {
        let decoded = try JWT.decode(try JWT.sign(claims, with: testKey))
        #expect(decoded.claims["iss"]?.stringValue == "herald@test-project.iam.gserviceaccount.com")
        #expect(decoded.claims["scope"]?.stringValue == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(decoded.claims["aud"]?.stringValue == "https://oauth2.googleapis.com/token")
        #expect(decoded.claims["iat"]?.int64Value == 1_700_000_000)
        #expect(decoded.claims["exp"]?.int64Value == 1_700_003_600)
        #expect(decoded.claims.objectValue?.map(\.key) == ["iss", "scope", "aud", "iat", "exp"])
    }

    @Test func expiryIsNeverMoreThanAnHourAfterIssue() throws {
        let long = JWT.Claims(issuer: "a", scope: "s", audience: "b", issuedAt: 100, lifetime: 86_400)
        let decoded = try JWT.decode(try JWT.sign(long, with: testKey))
        let iat = try #require(decoded.claims["iat"]?.int64Value)
        let exp = try #require(decoded.claims["exp"]?.int64Value)
        #expect(exp - iat == 3600)
        #expect(JWT.Claims(issuer: "a", scope: "s", audience: "b", issuedAt: 100, lifetime: 0).expiresAt > 100)
    }

    @Test func signatureVerifiesWithThePublicKey() throws {
        let token = try JWT.sign(claims, with: testKey)
        let decoded = try JWT.verify(token, with: testKey.publicKey)
        #expect(decoded.claims["iss"]?.stringValue == claims.issuer)
        // The same check with the public key as PEM, as a verifier outside Herald would hold it.
        let fromPEM = try RSAPublicKey(pem: testKey.publicKey.pem())
        #expect(throws: Never.self) { try JWT.verify(token, with: fromPEM) }
        // RS256 is deterministic: PKCS#1 v1.5 has no random salt.
        #expect(try JWT.sign(claims, with: testKey) == token)
    }

    @Test func anotherKeysSignatureIsRefused() throws {
        let other = try RSAPrivateKey.generate(bits: 2048)
        let token = try JWT.sign(claims, with: other)
        #expect(throws: JWT.Invalid("Invalid JWT Signature.")) { try JWT.verify(token, with: testKey.publicKey) }
    }

    @Test func changedClaimsBreakTheSignature() throws {
        let token = try JWT.sign(claims, with: testKey)
        let parts = token.split(separator: ".").map(String.init)
        var forged = claims
        forged.expiresAt += 86_400
        let forgedClaims = Base64URL.encode(Array(forged.json.serialized().utf8))
        let tampered = [parts[0], forgedClaims, parts[2]].joined(separator: ".")
        #expect(throws: JWT.Invalid("Invalid JWT Signature.")) { try JWT.verify(tampered, with: testKey.publicKey) }
    }

    @Test func malformedTokensAreRefused() {
        for token in ["", "a.b", "a.b.c.d", "!!.e30.e30", "e30.e30.***"] {
            #expect(throws: JWT.Invalid.self, "\(token)") { try JWT.verify(token, with: testKey.publicKey) }
        }
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array("{}".utf8)) + "."
        #expect(throws: JWT.Invalid("Invalid JWT: alg must be RS256")) { try JWT.verify(none, with: testKey.publicKey) }
    }

    @Test func base64URLHasNoPaddingAndTheURLAlphabet() {
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.encode(Array("a".utf8)) == "YQ")
        #expect(Base64URL.decode("-_8") == [0xfb, 0xff])
        #expect(Base64URL.decode("YQ==") == nil)
        #expect(Base64URL.decode("+/8") == nil)
        #expect(Base64URL.decode("Y") == nil)
        #expect(Base64URL.decode("") == [])
        #expect(Base64URL.decode("YQ\n") == nil)
        #expect(Base64URL.decode("YQé") == nil)
    }

    @Test func base64URLAgreesWithFoundationsBase64() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Data(bytes).base64EncodedString()
            let expected = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected)
            #expect(Base64URL.decode(expected) == bytes)
        }
    }
}
