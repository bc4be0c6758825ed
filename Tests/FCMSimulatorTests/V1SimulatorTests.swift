import FCMSimulator
import FCMV1Simulator
import Foundation
import HTTP
import OAuth
import Support
import Testing

/// The simulator's FCM v1 side, called as the server calls it.
@Suite struct V1SimulatorTests {
    static let key = try! RSAPrivateKey.generate(bits: 2048)
    static let email = "herald-test@test-project.iam.gserviceaccount.com"
    static let host = "127.0.0.1:8700"
    static let tokenURI = "http://127.0.0.1:8700/token"
    static let sendPath = "/v1/projects/test-project/messages:send"

    let simulator = FCMSimulator.everySide(
        .init(aliases: ["42": "notreg-42"]),
        v1: FCMV1Simulator(
            account: .init(clientEmail: email, projectID: "test-project", publicKeyPEM: key.publicKey.pem()),
            tokenLifetimeSeconds: 120))

    func assertion(key: RSAPrivateKey = key, issuer: String = email, audience: String = tokenURI,
                   scope: String = JWT.firebaseMessagingScope, issuedAt: Int64? = nil,
                   expiresIn: Int64 = 3600) throws -> String {
        let iat = issuedAt ?? Clock.nowMillis() / 1000
        return try JWT.sign(JWT.Claims(issuer: issuer, scope: scope, audience: audience, issuedAt: iat,
                                       expiresAt: iat + expiresIn), with: key)
    }

    func tokenRequest(_ assertion: String, grant: String = "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
        throws -> HTTPResponse
    {
        try simulator.call("POST", "/token",
                           headers: [("host", Self.host), ("content-type", "application/x-www-form-urlencoded")],
                           body: "grant_type=\(grant)&assertion=\(assertion)")
    }

    func accessToken() throws -> String {
        let reply = try tokenRequest(try assertion())
        return try #require(try reply.json()["access_token"]?.stringValue)
    }

    func send(_ message: String, token: String?, path: String = sendPath) throws -> HTTPResponse {
        var headers: [(name: String, value: String)] = [("content-type", "application/json")]
        if let token { headers.append(("authorization", "Bearer \(token)")) }
        return try simulator.call("POST", path, headers: headers, body: message)
    }

    func sendTo(_ target: String, token: String?) throws -> HTTPResponse {
        try send(#"{"message":{"token":"\#(target)","data":{"a":"b"}}}"#, token: token)
    }

    func errorCode(_ response: HTTPResponse) throws -> String? {
        let details = try response.json()["error"]?["details"]?.arrayValue ?? []
        return details.compactMap { $0["errorCode"]?.stringValue }.first
    }

    // MARK: - Token endpoint

    @Test func aValidAssertionGetsABearerToken() throws {
        let reply = try tokenRequest(try assertion())
        #expect(reply.status == 200)
        let body = try reply.json()
        #expect(body["access_token"]?.stringValue?.hasPrefix("sim-") == true)
        #expect(body["expires_in"]?.int64Value == 120)
        #expect(body["token_type"]?.stringValue == "Bearer")
        let counts = simulator.side(FCMV1Simulator.self)!.oauthCounts()
        #expect([counts.tokenRequests, counts.tokensIssued, counts.refused, counts.failed] as [Int] == [1, 1, 0, 0])
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let name: String
        let error: String
        let description: String
        let make: @Sendable (V1SimulatorTests) throws -> HTTPResponse
        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal(name: "another key", error: "invalid_grant", description: "Invalid JWT Signature.") {
            try $0.tokenRequest(try $0.assertion(key: try RSAPrivateKey.generate(bits: 2048)))
        },
        Refusal(name: "another issuer", error: "invalid_grant", description: "Invalid email or User ID") {
            try $0.tokenRequest(try $0.assertion(issuer: "someone@else.iam.gserviceaccount.com"))
        },
        Refusal(name: "another audience", error: "invalid_grant",
                description: "Invalid JWT: Failed audience check. The right audience is http://127.0.0.1:8700/token") {
            try $0.tokenRequest(try $0.assertion(audience: "https://oauth2.googleapis.com/token"))
        },
        Refusal(name: "expired", error: "invalid_grant", description: "Invalid JWT: Token must be a short-lived "
                + "token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.") {
            try $0.tokenRequest(try $0.assertion(issuedAt: Clock.nowMillis() / 1000 - 7200))
        },
        Refusal(name: "longer than an hour", error: "invalid_grant", description: "Invalid JWT: Token must be a "
                + "short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in "
                + "the JWT claim.") {
            try $0.tokenRequest(try $0.assertion(expiresIn: 3601))
        },
        Refusal(name: "another scope", error: "invalid_scope",
                description: "Invalid OAuth scope or ID token audience provided.") {
            try $0.tokenRequest(try $0.assertion(scope: "https://www.googleapis.com/auth/userinfo.email"))
        },
        Refusal(name: "another grant", error: "unsupported_grant_type", description: "Invalid grant_type: password") {
            try $0.tokenRequest(try $0.assertion(), grant: "password")
        },
        Refusal(name: "not a JWT", error: "invalid_grant", description: "Invalid JWT: not three dot-separated parts") {
            try $0.tokenRequest("abc")
        },
    ]

    @Test(arguments: refusals)
    func assertionsAreRefusedInGooglesWords(_ refusal: Refusal) throws {
        let reply = try refusal.make(self)
        #expect(reply.status == 400)
        let body = try reply.json()
        #expect(body["error"]?.stringValue == refusal.error)
        #expect(body["error_description"]?.stringValue == refusal.description)
        #expect(simulator.side(FCMV1Simulator.self)!.oauthCounts().refused == 1)
    }

    @Test func withoutAServiceAccountEveryAssertionIsRefused() throws {
        let bare = FCMSimulator.everySide()
        let form = "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=\(try assertion())"
        let reply = try bare.call("POST", "/token", headers: [("host", Self.host)], body: form)
        #expect(reply.status == 400)
        #expect(try reply.json()["error_description"]?.stringValue?.contains("--service-account") == true)
    }

    @Test func tokenEndpointFaultsComeFromControl() throws {
        #expect(try simulator.control(#"{"token_fail_next": 1, "token_refuse_next": 1}"#).status == 200)
        #expect(try tokenRequest(try assertion()).status == 400)
        #expect(try tokenRequest(try assertion()).status == 503)
        #expect(try tokenRequest(try assertion()).status == 200)
    }

    // MARK: - messages:send

    @Test func aSendWithAnIssuedTokenIsDelivered() throws {
        let reply = try sendTo("tok-1", token: try accessToken())
        #expect(reply.status == 200)
        let name = try #require(try reply.json()["name"]?.stringValue)
        #expect(name.hasPrefix("projects/test-project/messages/"))
    }

    @Test func validateOnlyGetsAFakeName() throws {
        let reply = try send(#"{"validate_only":true,"message":{"topic":"news"}}"#, token: try accessToken())
        #expect(try reply.json()["name"]?.stringValue == "projects/test-project/messages/fake_message_id")
        #expect(simulator.stats().requests.last?.dryRun == true)
    }

    @Test func noUnknownOrRevokedTokenIsAccepted() throws {
        for token in [nil, "sim-forged"] {
            let reply = try sendTo("tok-1", token: token)
            #expect(reply.status == 401)
            #expect(try reply.json()["error"]?["status"]?.stringValue == "UNAUTHENTICATED")
            #expect(try errorCode(reply) == nil)
        }
        let token = try accessToken()
        #expect(try sendTo("tok-1", token: token).status == 200)
        #expect(try simulator.control(#"{"revoke_tokens": true}"#).status == 200)
        #expect(try sendTo("tok-1", token: token).status == 401)
    }

    @Test func anotherProjectIsPermissionDenied() throws {
        let reply = try send(#"{"message":{"token":"t"}}"#, token: try accessToken(),
                             path: "/v1/projects/other/messages:send")
        #expect(reply.status == 403)
        #expect(try reply.json()["error"]?["status"]?.stringValue == "PERMISSION_DENIED")
    }

    struct PrefixRow: Sendable, CustomTestStringConvertible {
        let token: String
        let status: Int
        let errorCode: String?
        var testDescription: String { token }
    }

    static let prefixRows: [PrefixRow] = [
        PrefixRow(token: "ok-1", status: 200, errorCode: nil),
        PrefixRow(token: "notreg-1", status: 404, errorCode: "UNREGISTERED"),
        PrefixRow(token: "42", status: 404, errorCode: "UNREGISTERED"),
        PrefixRow(token: "invalid-1", status: 400, errorCode: "INVALID_ARGUMENT"),
        PrefixRow(token: "mismatch-1", status: 403, errorCode: "SENDER_ID_MISMATCH"),
        PrefixRow(token: "badpkg-1", status: 400, errorCode: "INVALID_ARGUMENT"),
        PrefixRow(token: "apns-1", status: 401, errorCode: "THIRD_PARTY_AUTH_ERROR"),
        PrefixRow(token: "canon-a-to-b", status: 200, errorCode: nil),
        PrefixRow(token: "error-QUOTA_EXCEEDED-1", status: 429, errorCode: "QUOTA_EXCEEDED"),
        PrefixRow(token: "error-NotRegistered-1", status: 404, errorCode: "UNREGISTERED"),
        PrefixRow(token: "error-Weird-1", status: 500, errorCode: "Weird"),
    ]

    @Test(arguments: prefixRows)
    func tokensAreAnsweredByPrefix(_ row: PrefixRow) throws {
        let reply = try sendTo(row.token, token: try accessToken())
        #expect(reply.status == row.status)
        #expect(try errorCode(reply) == row.errorCode)
    }

    @Test func anInvalidTokenIsNamedAsTheField() throws {
        let reply = try sendTo("invalid-1", token: try accessToken())
        let details = try reply.json()["error"]?["details"]?.arrayValue ?? []
        #expect(details.contains { $0["fieldViolations"]?.arrayValue?.first?["field"]?.stringValue == "message.token" })
    }

    @Test func countedPrefixesFailThenDeliver() throws {
        let token = try accessToken()
        #expect(try sendTo("unavail-2-x", token: token).status == 503)
        #expect(try sendTo("unavail-2-x", token: token).status == 503)
        #expect(try sendTo("unavail-2-x", token: token).status == 200)
        #expect(try sendTo("internal-1-x", token: token).status == 500)
        #expect(try sendTo("ratelimit-1-x", token: token).status == 429)
        #expect(try send(#"{"message":{"topic":"ratelimit-1-t"}}"#, token: token).status == 429)
        #expect(try send(#"{"message":{"topic":"ratelimit-1-t"}}"#, token: token).status == 200)
    }

    @Test func requestFaultsSpeakV1() throws {
        let token = try accessToken()
        #expect(try simulator.control(#"{"fail_next": 1, "status": 429, "retry_after": "2"}"#).status == 200)
        let quota = try sendTo("tok-1", token: token)
        #expect(quota.status == 429)
        #expect(quota.header("retry-after") == "2")
        #expect(try errorCode(quota) == "QUOTA_EXCEEDED")
        #expect(try simulator.control(#"{"fail_next": 1, "status": 503}"#).status == 200)
        #expect(try errorCode(try sendTo("tok-1", token: token)) == "UNAVAILABLE")
        #expect(try simulator.control(#"{"unauthorized_next": 1}"#).status == 200)
        let refused = try sendTo("tok-1", token: token)
        #expect(refused.status == 401)
        #expect(try refused.json()["error"]?["status"]?.stringValue == "UNAUTHENTICATED")
        #expect(try sendTo("tok-1", token: token).status == 200)
    }

    @Test func invalidBodiesAreInvalidArgument() throws {
        let token = try accessToken()
        for body in [
            "not json", #"{"message":{}}"#, #"{"message":{"token":"a","topic":"b"}}"#,
            #"{"message":{"token":"a","data":{"n":7}}}"#, #"{"message":{"token":"a","android":{"ttl":"60"}}}"#,
            #"{"message":{"token":"a"},"extra":1}"#, #"{"message":{"token":"a","data":{"from":"x"}}}"#,
        ] {
            let reply = try send(body, token: token)
            #expect(reply.status == 400, "\(body)")
            #expect(try reply.json()["error"]?["status"]?.stringValue == "INVALID_ARGUMENT", "\(body)")
        }
    }

    @Test func theRequestLogKeepsWhatV1Carried() throws {
        let body = #"{"validate_only":false,"message":{"token":"tok-1","android":{"collapse_key":"c","#
            + #""priority":"HIGH","ttl":"250s"},"apns":{"headers":{"apns-expiration":"0"}}}}"#
        #expect(try send(body, token: try accessToken()).status == 200)
        let entry = try #require(simulator.stats().requests.last)
        #expect(entry.format == .v1)
        #expect(entry.tokens == ["tok-1"])
        #expect(entry.timeToLive == 250)
        #expect(entry.collapseKey == "c")
        #expect(entry.priority == "high")
        #expect(entry.status == 200)
        #expect(entry.json["format"]?.stringValue == "v1")
    }

    @Test func anFIDIsAnsweredLikeATokenOfTheSameNameAndLoggedWithTheMessage() throws {
        let token = try accessToken()
        let body = #"{"message":{"fid":"fid-1","webpush":{"headers":{"TTL":"60"}},"data":{"a":"b"}}}"#
        #expect(try send(body, token: token).status == 200)
        let entry = try #require(simulator.stats().requests.last)
        #expect(entry.fid == "fid-1")
        #expect(entry.tokens == ["fid-1"])
        #expect(entry.message?["webpush"]?["headers"]?["TTL"]?.stringValue == "60")
        #expect(entry.json["fid"]?.stringValue == "fid-1")
        #expect(entry.json["message"]?["data"] == .object([("a", .string("b"))]))

        let unregistered = try send(#"{"message":{"fid":"notreg-fid"}}"#, token: token)
        #expect(unregistered.status == 404)
        #expect(try errorCode(unregistered) == "UNREGISTERED")
        let two = try send(#"{"message":{"fid":"f","token":"t"}}"#, token: token)
        #expect(two.status == 400, "one target only")
    }

    /// A service-account key file with the suite's key, in a temporary file the caller removes.
    static func serviceAccountFile() throws -> String {
        let account = ServiceAccount(clientEmail: email, privateKey: key, projectID: "test-project", tokenURI: tokenURI)
        let name = "sim-sa-\(UUID().uuidString).json"
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        try account.json().write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func theServiceAccountFlagReadsAKeyFile() throws {
        let path = try Self.serviceAccountFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let side = try FCMV1Simulator(flags: ["--service-account": path, "--token-lifetime": "30"])
        #expect(side.account?.clientEmail == Self.email)
        #expect(side.account?.projectID == "test-project")
        #expect(side.tokenLifetimeSeconds == 30)
        #expect(throws: FCMSimulator.Configuration.ArgumentError.self) {
            try FCMV1Simulator(flags: ["--service-account": "/nonexistent.json"])
        }
    }
}
