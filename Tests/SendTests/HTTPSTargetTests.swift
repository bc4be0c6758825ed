import Testing

@testable import Send

@Suite struct HTTPSTargetTests {
    @Test func anHTTPSURLGivesHostPortAuthorityAndPath() throws {
        let target = try #require(HTTPSTarget("https://fcm.googleapis.com/v1/projects/p/messages:send"))
        #expect(target.host == "fcm.googleapis.com")
        #expect(target.port == 443)
        #expect(target.authority == "fcm.googleapis.com")
        #expect(target.path == "/v1/projects/p/messages:send")
        #expect(target.origin == "fcm.googleapis.com:443")
    }

    @Test func portsQueriesAndIPv6() throws {
        let local = try #require(HTTPSTarget("HTTPS://127.0.0.1:8443/send?x=1#fragment"))
        #expect(local.host == "127.0.0.1")
        #expect(local.port == 8443)
        #expect(local.authority == "127.0.0.1:8443")
        #expect(local.path == "/send?x=1")
        let bare = try #require(HTTPSTarget("https://example.test"))
        #expect(bare.path == "/")
        let query = try #require(HTTPSTarget("https://example.test?a=b"))
        #expect(query.path == "/?a=b")
        let six = try #require(HTTPSTarget("https://[::1]:9443/x"))
        #expect(six.host == "::1")
        #expect(six.port == 9443)
        #expect(six.authority == "[::1]:9443")
        // The same origin whether or not the default port is written.
        #expect(HTTPSTarget("https://Example.test:443/a")?.origin == HTTPSTarget("https://example.test/b")?.origin)
    }

    @Test(arguments: [
        "http://fcm.googleapis.com/", "https://", "https:///path", "https://user@host/", "https://host:0/",
        "https://host:65536/", "https://host:12a/", "https://[::1/", "https://[::1]x/", "ftp://host/", "",
    ])
    func whatItDoesNotTakeIsLeftToLibcurl(_ url: String) {
        #expect(HTTPSTarget(url) == nil)
    }
}
