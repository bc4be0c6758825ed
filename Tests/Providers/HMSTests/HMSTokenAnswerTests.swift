import Send
import Testing

@testable import Delivery

/// Huawei's token endpoint's answers as `AccessTokenCache` reads them (SPEC §21, docs/hms-protocol.md).
@Suite struct HMSTokenAnswerTests {
    private func read(_ status: Int, _ body: String) -> AccessTokenCache.Answer {
        AccessTokenCache.read(.response(status: status, headers: [], body: Array(body.utf8), httpVersion: "1.1"))
    }

    @Test func expiresInAsANumberOrAString() {
        #expect(read(200, #"{"access_token":"CV/a==","expires_in":3600,"token_type":"Bearer"}"#)
            == .token("CV/a==", expiresInSeconds: 3600))
        #expect(read(200, #"{"access_token":"CV/a==","expires_in":"3600","token_type":"Bearer"}"#)
            == .token("CV/a==", expiresInSeconds: 3600))
    }

    @Test func theTokensSlashesComeEscaped() {
        #expect(read(200, #"{"access_token":"CF3Xl2XV\/6jMKZ==","expires_in":3600}"#)
            == .token("CF3Xl2XV/6jMKZ==", expiresInSeconds: 3600))
    }

    @Test func aRefusedClientIsAPauseWithHuaweisCodes() {
        #expect(read(400, #"{"error":1101,"sub_error":12304,"error_description":"invalid client_secret"}"#)
            == .refused("OAuth 1101 (sub_error 12304): invalid client_secret"))
        #expect(read(400, #"{"error":1101,"sub_error":20003}"#) == .refused("OAuth 1101 (sub_error 20003)"))
    }

    @Test func flowControlAndServerErrorsAreRetried() {
        for status in [503, 500, 502, 504, 590] {
            #expect(read(status, "") == .failed("the token endpoint answered HTTP \(status)"))
        }
    }
}
