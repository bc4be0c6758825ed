import Support
import Testing

@testable import Classify
@testable import FCMV1

private let now: Int64 = 1_700_000_000_000

/// A v1 error body as FCM writes it: `error.code`, `message`, `status` and, when given, the FcmError detail.
private func fcmError(_ http: Int, _ status: String, errorCode: String? = nil, message: String = "m",
                      extraDetail: String? = nil) -> String {
    var details: [String] = []
    if let errorCode {
        details.append(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#)
    }
    if let extraDetail { details.append(extraDetail) }
    let detailText = details.isEmpty ? "" : #","details":[\#(details.joined(separator: ","))]"#
    return #"{"error":{"code":\#(http),"message":"\#(message)","status":"\#(status)"\#(detailText)}}"#
}

private func classify(_ status: Int, _ body: String, headers: [(name: String, value: String)] = [],
                      mayRenew: Bool = true) -> Classification {
    V1Classifier.classify(status: status, headers: headers, body: Array(body.utf8), now: now,
                          mayRenewCredentials: mayRenew)
}

@Suite struct V1ClassifierTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        let body: String
        let outcome: Outcome
        var closesGate = false
        var testDescription: String { name }
    }

    /// SPEC §12's table, row by row, with FCM's own bodies.
    static let rows: [Row] = [
        Row(name: "200 name", status: 200, body: #"{"name":"projects/p/messages/0:1500415314455276%31bd1c9631bd1c96"}"#,
            outcome: .delivered(fcmMessageID: "projects/p/messages/0:1500415314455276%31bd1c9631bd1c96",
                                canonicalToken: nil)),
        Row(name: "404 UNREGISTERED", status: 404,
            body: fcmError(404, "NOT_FOUND", errorCode: "UNREGISTERED", message: "Requested entity was not found."),
            outcome: .notRegistered),
        Row(name: "400 INVALID_ARGUMENT naming the token (message)", status: 400,
            body: fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                           message: "The registration token is not a valid FCM registration token"),
            outcome: .deadToken(reason: .v1(.invalidArgument))),
        Row(name: "400 INVALID_ARGUMENT naming the token (field violation)", status: 400,
            body: fcmError(400, "INVALID_ARGUMENT", message: "Request contains an invalid argument.",
                           extraDetail: #"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":"#
                               + #"[{"field":"message.token","description":"Invalid registration token"}]}"#),
            outcome: .deadToken(reason: .v1(.invalidArgument))),
        Row(name: "400 INVALID_ARGUMENT otherwise", status: 400,
            body: fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                           message: "Invalid value at 'message.data[0].value' (TYPE_STRING), 1",
                           extraDetail: #"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":"#
                               + #"[{"field":"message.data[0].value","description":"Invalid value"}]}"#),
            outcome: .deadMessage(reason: .v1(.invalidArgument))),
        Row(name: "403 SENDER_ID_MISMATCH", status: 403,
            body: fcmError(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH", message: "SenderId mismatch"),
            outcome: .deadToken(reason: .v1(.senderIDMismatch))),
        Row(name: "429 QUOTA_EXCEEDED", status: 429,
            body: fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"),
            outcome: .retrySlow(reason: .v1(.quotaExceeded)), closesGate: true),
        Row(name: "503 UNAVAILABLE", status: 503, body: fcmError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE"),
            outcome: .retry(reason: .v1(.unavailable)), closesGate: true),
        Row(name: "500 INTERNAL", status: 500, body: fcmError(500, "INTERNAL", errorCode: "INTERNAL"),
            outcome: .retry(reason: .v1(.internal)), closesGate: true),
        Row(name: "401 THIRD_PARTY_AUTH_ERROR", status: 401,
            body: fcmError(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR"),
            outcome: .pauseApp(reason: .v1(.thirdPartyAuthError))),
        Row(name: "401 UNAUTHENTICATED", status: 401,
            body: fcmError(401, "UNAUTHENTICATED",
                           message: "Request had invalid authentication credentials. Expected OAuth 2 access token"),
            outcome: .requeue(reason: .v1(.unauthenticated))),
        // Beyond the table: what else FCM and the proxies in front of it answer.
        Row(name: "status only, no FcmError detail", status: 404, body: fcmError(404, "NOT_FOUND"),
            outcome: .retry(reason: .other("NOT_FOUND"))),
        Row(name: "403 PERMISSION_DENIED (the account may not send)", status: 403,
            body: fcmError(403, "PERMISSION_DENIED", message: "Permission 'cloudmessaging.messages.create' denied"),
            outcome: .pauseApp(reason: .v1(.permissionDenied))),
        Row(name: "APNS_AUTH_ERROR (older name)", status: 401,
            body: fcmError(401, "UNAUTHENTICATED", errorCode: "APNS_AUTH_ERROR"),
            outcome: .pauseApp(reason: .v1(.apnsAuthError))),
        Row(name: "UNSPECIFIED_ERROR", status: 500, body: fcmError(500, "INTERNAL", errorCode: "UNSPECIFIED_ERROR"),
            outcome: .retry(reason: .v1(.unspecifiedError)), closesGate: true),
        Row(name: "502 from a proxy, HTML", status: 502, body: "<html>Bad Gateway</html>",
            outcome: .retry(reason: .httpStatus(502)), closesGate: true),
        Row(name: "401 without a body", status: 401, body: "", outcome: .requeue(reason: .v1(.unauthenticated))),
        Row(name: "400 without a body", status: 400, body: "", outcome: .deadMessage(reason: .v1(.invalidArgument))),
        Row(name: "429 without a body", status: 429, body: "", outcome: .retrySlow(reason: .v1(.quotaExceeded)),
            closesGate: true),
        Row(name: "an unknown code on 404", status: 404, body: fcmError(404, "NOT_FOUND", errorCode: "SOMETHING_NEW"),
            outcome: .retry(reason: .other("SOMETHING_NEW"))),
        Row(name: "a code that is not an identifier", status: 500,
            body: fcmError(500, "INTERNAL", errorCode: "two words"),
            outcome: .retry(reason: .unknownError), closesGate: true),
        Row(name: "200 without a name", status: 200, body: #"{"nom":"x"}"#,
            outcome: .retry(reason: .invalidResponse)),
        Row(name: "200 not JSON", status: 200, body: "ok", outcome: .retry(reason: .invalidResponse)),
        Row(name: "200 empty name", status: 200, body: #"{"name":""}"#, outcome: .retry(reason: .invalidResponse)),
        Row(name: "302 redirect", status: 302, body: "", outcome: .retry(reason: .httpStatus(302))),
        Row(name: "200 name, as FCM lays it out", status: 200,
            body: "{\n  \"name\": \"projects/p/messages/0:15%31\"\n}\n",
            outcome: .delivered(fcmMessageID: "projects/p/messages/0:15%31", canonicalToken: nil)),
        Row(name: "200 name with an escape", status: 200, body: #"{"name":"projects\/p\u002Fm"}"#,
            outcome: .delivered(fcmMessageID: "projects/p/m", canonicalToken: nil)),
        Row(name: "200 name and another field", status: 200, body: #"{"name":"n","x":1}"#,
            outcome: .delivered(fcmMessageID: "n", canonicalToken: nil)),
        Row(name: "200 name, then junk", status: 200, body: #"{"name":"n"}x"#,
            outcome: .retry(reason: .invalidResponse)),
        Row(name: "200 name not a string", status: 200, body: #"{"name":7}"#,
            outcome: .retry(reason: .invalidResponse)),
        Row(name: "200 unterminated name", status: 200, body: #"{"name":"n"#,
            outcome: .retry(reason: .invalidResponse)),
    ]

    @Test(arguments: rows)
    func answerMapsByTheTable(_ row: Row) {
        let classification = classify(row.status, row.body)
        #expect(classification.outcomes == [row.outcome])
        #expect(classification.closesGate == row.closesGate)
        #expect(classification.retryAfterUntil == nil)
    }

    @Test func theQuickReadOfASuccessAgreesWithTheParser() {
        let replies = [
            #"{"name":"projects/p/messages/1"}"#, " { \"name\" : \"a b\" } ", #"{"name":"é"}"#, #"{"name":""}"#,
            #"{"name":"a\"b"}"#, #"{"name":"a","b":2}"#, #"{"nam":"a"}"#, #"["name"]"#, "", "{", #"{"name":"a"}}"#,
        ]
        for reply in replies {
            let bytes = Array(reply.utf8)
            let quick = bytes.withUnsafeBufferPointer { V1Classifier.plainNameReply($0) }
            guard let quick else { continue }
            // Whatever the quick read accepts, the parser reads the same way.
            let parsed = try? JSON.parse(bytes)
            #expect(parsed?["name"]?.stringValue == quick, "\(reply)")
            #expect(parsed?.objectValue?.count == 1, "\(reply)")
        }
        #expect(Array(#"{"name":"projects/p/messages/1"}"#.utf8).withUnsafeBufferPointer {
            V1Classifier.plainNameReply($0)
        } == "projects/p/messages/1")
    }

    @Test func secondUnauthenticatedPausesTheApp() {
        let body = fcmError(401, "UNAUTHENTICATED")
        #expect(classify(401, body, mayRenew: true).outcomes == [.requeue(reason: .v1(.unauthenticated))])
        #expect(classify(401, body, mayRenew: false).outcomes == [.pauseApp(reason: .v1(.unauthenticated))])
        // Renewing the access token cannot cure APNs credentials.
        let thirdParty = fcmError(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR")
        #expect(classify(401, thirdParty, mayRenew: true).outcomes == [.pauseApp(reason: .v1(.thirdPartyAuthError))])
    }

    @Test func retryAfterOnA429ClosesTheGateUntilThen() {
        let classification = classify(429, fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"),
                                      headers: [("retry-after", "30")])
        #expect(classification.outcomes == [.retrySlow(reason: .v1(.quotaExceeded))])
        #expect(classification.retryAfterUntil == now + 30_000)
        #expect(classification.closesGate)
    }

    @Test func retryAfterAsAnHTTPDateOnA503() {
        let classification = classify(503, fcmError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE"),
                                      headers: [("Retry-After", "Tue, 14 Nov 2023 22:14:20 GMT")])
        #expect(classification.retryAfterUntil == 1_700_000_060_000)
        #expect(classification.closesGate)
    }

    @Test func transportFailuresRetryAndCloseTheGate() {
        let classification = V1Classifier.transportFailure(reason: .other("timeout"))
        #expect(classification.outcomes == [.retry(reason: .other("timeout"))])
        #expect(classification.closesGate)
    }

    @Test func errorCodeComesFromTheFcmErrorDetailFirst() {
        let body = #"{"error":{"code":404,"status":"NOT_FOUND","details":["#
            + #"{"@type":"type.googleapis.com/google.rpc.Other","errorCode":"OTHER"},"#
            + #"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
        #expect(V1Classifier.errorReply(Array(body.utf8))?.errorCode == "UNREGISTERED")
        #expect(classify(404, body).outcomes == [.notRegistered])
    }

    @Test func hostileBodiesNeverTrap() {
        for body in ["", "null", "[]", #"{"error":1}"#, #"{"error":{"details":7}}"#, #"{"error":{"details":[1,null]}}"#,
                     String(repeating: "[", count: 10_000), #"{"name":42}"#] {
            for status in [200, 400, 401, 403, 404, 429, 500, 503, 999, -1] {
                #expect(classify(status, body).outcomes.count == 1)
            }
        }
    }
}
