import Console
import HTTP
import Testing

private let now: Int64 = 1_700_000_000_000

/// Who gets into `/v1/admin/…` and which changes are refused, decided on the head alone (SPEC §18).
@Suite struct ConsoleAccessTests {
    private let access = ConsoleAccess(apiToken: "secret", readOnlyToken: "look")

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
        #expect(refused?.status == 403 && refused?.code == "ReadOnly")
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
        #expect(access.refusal(request("POST", "/v1/admin/apps/a/pause", cookie), now: now)?.code == "ReadOnly")
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

    @Test(arguments: [
        [("sec-fetch-site", "cross-site")], [("sec-fetch-site", "same-site")], [("sec-fetch-site", "none")],
        [("origin", "http://evil.example")], [("origin", "null")], [("origin", "http://127.0.0.1:8601")],
        [("sec-fetch-site", "same-origin"), ("origin", "https://evil.example")],
    ])
    func aChangeFromAnotherSiteIsRefusedWhateverItsToken(_ headers: [(String, String)]) {
        let refused = access.refusal(
            request("POST", "/v1/admin/dead/requeue", [("authorization", "Bearer secret")] + headers), now: now)
        #expect(refused?.status == 403 && refused?.code == "CrossOrigin")
        // Reads are not changes: a cross-site GET still needs a token, and the cookie is SameSite=Strict.
        #expect(access.refusal(request("GET", "/v1/admin/overview", [("authorization", "Bearer secret")] + headers),
                               now: now) == nil)
    }

    @Test func aChangeFromTheSameOriginOrAScriptGoesThrough() {
        let token = ("authorization", "Bearer secret")
        for headers in [
            [token], [token, ("sec-fetch-site", "same-origin")], [token, ("origin", "http://127.0.0.1:8600")],
            [token, ("origin", "HTTP://127.0.0.1:8600".lowercased()), ("sec-fetch-site", "same-origin")],
        ] {
            #expect(access.refusal(request("POST", "/v1/admin/dead/requeue", headers), now: now) == nil)
        }
    }

    @Test func withoutAnAPITokenEveryoneIsAdminButSameOriginStillHolds() {
        let open = ConsoleAccess(apiToken: nil, readOnlyToken: "ignored")
        #expect(!open.needsLogin)
        #expect(open.refusal(request("POST", "/v1/admin/dead/requeue"), now: now) == nil)
        #expect(open.role(forToken: "anything") == .admin)
        let crossSite = open.refusal(request("POST", "/v1/admin/dead/requeue", [("origin", "http://evil.example")]),
                                     now: now)
        #expect(crossSite?.code == "CrossOrigin")
    }
}
