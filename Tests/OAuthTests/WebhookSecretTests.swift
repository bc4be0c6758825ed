import Testing

@testable import OAuth

/// Standard Webhooks signing: the spec's reference libraries' known answer, and what a secret file may hold.
@Suite struct WebhookSecretTests {
    /// The vector of the reference libraries' tests (`test_sign_function` in the Python library).
    @Test func signsTheReferenceLibrariesKnownAnswer() throws {
        let secret = try WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let signature = try secret.signature(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func aFileMayWrapTheSecretInWhitespace() throws {
        let padded = try WebhookSecret(text: "  whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n")
        let bare = try WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        #expect(try padded.signature(id: "a", timestamp: 1, body: []) == bare.signature(id: "a", timestamp: 1, body: []))
    }

    @Test func refusesSecretsWithoutThePrefixNotBase64OrTooShort() {
        #expect(throws: CryptoError.self) { try WebhookSecret(text: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") }
        #expect(throws: CryptoError.self) { try WebhookSecret(text: "whsec_not base64!") }
        #expect(throws: CryptoError.self) { try WebhookSecret(text: "whsec_c2hvcnQ=") }
    }

    @Test func generatedSecretsHoldThirtyTwoRandomBytes() throws {
        let first = try WebhookSecret.generate()
        #expect(first.hasPrefix("whsec_") && first.count == 6 + 44)
        #expect(first != (try WebhookSecret.generate()))
        _ = try WebhookSecret(text: first)
    }
}
