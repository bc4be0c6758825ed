import Console
import HTTP
import Ingest
import Support
import Testing

private let now: Int64 = 1_700_000_000_000

/// Who gets into `/v1/admin/…` and which changes are refused, decided on the head alone (SPEC §18). Other sites'
/// requests are `FrontDoor`'s (IngestTests' `FrontDoorTests`).
@Suite struct ConsoleAccessTests {
    private let access = ConsoleAccess(apiToken: "secret", readOnlyToken: "look")

    private func code(_ response: HTTPResponse?) -> String? {
        response.flatMap { try? JSON.parse($0.body) }?["error"]?["code"]?.stringValue
    }

    private func request(
        _ method: String = "GET", _ path: String = "/v1/admin/overview", _ headers: [(String, String)] = []
    ) -> HTTPRequest {
        HTTPRequest(method: method, target: path, headers: [("host", "127.0.0.1:8600")] + headers)
    }

    @Test func theAPITokenMayDoEverythingAndTheReadOnlyTokenOnlyLook() {
        let admin = [("authorization", "Bearer secret")]
        let looker = [("authorization", "Bearer look")]
        #expect(access.refusal(request("GET", "/v1/admin/overview", admin), now: now) == nil)
        #expect(access.refusal(request("POST", "/v1/admin/dead/requeue", admin), now: now) == nil)
        #expect(access.refusal(request("GET", "/v1/admin/overview", looker), now: now) == nil)
        let refused = access.refusal(request("POST", "/v1/admin/dead/requeue", looker), now: now)
        #expect(refused?.status == 403 && code(refused) == "ReadOnly")
        #expect(access.refusal(request("DELETE", "/v1/admin/x", looker), now: now)?.status == 403)
    }

    @Test func aMissingOrWrongTokenIsUnauthorizedAndACookieDoesNotRescueAWrongHeader() {
        #expect(access.refusal(request(), now: now)?.status == 401)
        #expect(access.refusal(request("GET", "/", [("authorization", "Bearer secreT")]), now: now)?.status == 401)
        #expect(access.refusal(request("GET", "/", [("authorization", "secret")]), now: now)?.status == 401)
        #expect(access.refusal(request("GET", "/", [("authorization", "Bearer ")]), now: now)?.status == 401)
        let session = access.sessions.create(.admin, now: now)
        let wrongHeader = [("authorization", "Bearer nope"), ("cookie", "herald_console=\(session)")]
        #expect(access.refusal(request("GET", "/", wrongHeader), now: now)?.status == 401)
    }

    @Test func aLoginCookieCarriesItsRoleUntilItExpires() {
        let session = access.sessions.create(.readOnly, now: now)
        let cookie = [("cookie", "theme=dark; herald_console=\(session); other=1")]
        #expect(access.role(of: request("GET", "/", cookie), now: now) == .readOnly)
        #expect(code(access.refusal(request("POST", "/v1/admin/apps/a/pause", cookie), now: now)) == "ReadOnly")
        let later = now + ConsoleSessions.lifetimeMillis
        #expect(access.role(of: request("GET", "/", cookie), now: later) == nil)
        #expect(access.role(of: request("GET", "/", [("cookie", "herald_console=guess")]), now: now) == nil)
        let other = access.sessions.create(.admin, now: now)
        access.sessions.remove(other)
        #expect(access.role(of: request("GET", "/", [("cookie", "herald_console=\(other)")]), now: now) == nil)
    }

    @Test func sessionIdsAreLongRandomAndNeverTheToken() {
        let first = access.sessions.create(.admin, now: now)
        let second = access.sessions.create(.admin, now: now)
        #expect(first.count == 64 && first != second && !first.contains("secret"))
    }

    @Test func withoutAnAPITokenEveryoneIsAdmin() {
        let open = ConsoleAccess(apiToken: nil, readOnlyToken: "ignored")
        #expect(!open.needsLogin)
        #expect(open.refusal(request("POST", "/v1/admin/dead/requeue"), now: now) == nil)
        guard case .passed(.admin) = open.check(token: "anything", from: nil) else {
            Issue.record("without an API token any token is admin")
            return
        }
    }
}
