import Foundation
import OAuth
import Testing
import TestSupport

/// Who may knock at a real `herald serve` (SPEC §20), with requests written as a browser writes them: another site's
/// `text/plain` POST (which needs no preflight) refused, a DNS-rebound name refused without a token, wrong tokens
/// slowed down and logged with the client's address; and key files others can read warned about.
@Suite struct FrontDoorIntegrationTests {
    /// One raw request on a new connection; the answer.
    private func send(_ herald: HeraldProcess, _ head: String, body: String = "") throws -> RawHTTPClient.Response {
        let client = try RawHTTPClient(herald.baseURL)
        try client.send(head + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        return try client.readResponse()
    }

    private func stored(_ herald: HeraldProcess) throws -> String {
        try runHerald(["status", "--db", herald.databasePath, "--totals", "--json"]).stdout
    }

    @Test func anotherSitesPageCanNeitherPostNorReadThroughAReboundName() throws {
        let herald = try HeraldProcess(arguments: ["--sandbox"], paused: true)
        defer { herald.stop() }
        let own = "Host: \(herald.baseURL.host!):\(herald.baseURL.port!)\r\n"
        let message = #"{"to": "tok-1", "data": {"k": "v"}}"#
        // A form or a fetch with Content-Type text/plain from http://evil.example: no preflight, the browser sends it.
        for site in ["Origin: http://evil.example\r\n", "Sec-Fetch-Site: cross-site\r\n",
                     "Origin: null\r\nSec-Fetch-Site: cross-site\r\n"] {
            let answer = try send(
                herald, "POST /v1/messages HTTP/1.1\r\n\(own)Content-Type: text/plain\r\n\(site)", body: message)
            #expect(answer.status == 403 && answer.body.contains("CrossOrigin"), "\(site): \(answer.body)")
        }
        // The same page after its name was rebound to 127.0.0.1: its own origin, but not a loopback name.
        for host in ["evil.example", "evil.example:\(herald.baseURL.port!)", "127.0.0.1.evil.example",
                     "localhost.evil.example"] {
            for head in ["GET /v1/admin/dead HTTP/1.1\r\n",
                         "POST /v1/messages HTTP/1.1\r\nOrigin: http://\(host)\r\nSec-Fetch-Site: same-origin\r\n"] {
                let answer = try send(herald, head + "Host: \(host)\r\n", body: head.hasPrefix("POST") ? message : "")
                #expect(answer.status == 421 && answer.body.contains("MisdirectedRequest"), "\(host): \(answer.body)")
            }
        }
        let nothing = try stored(herald)
        #expect(nothing.contains(#""totals":[]"#), "a refused request stored something: \(nothing)")
        for host in ["localhost:\(herald.baseURL.port!)", "127.0.0.1", "[::1]:\(herald.baseURL.port!)"] {
            let answer = try send(herald, "POST /v1/messages HTTP/1.1\r\nHost: \(host)\r\n", body: message)
            #expect(answer.status == 202, "\(host): \(answer.body)")
        }
    }

    @Test func wrongTokensAreLoggedWithTheClientAndThenSlowedDown() throws {
        let herald = try HeraldProcess(arguments: ["--sandbox", "--api-token", "right-token-zq7"])
        let own = "Host: 127.0.0.1:\(herald.baseURL.port!)\r\n"
        // Five a minute are answered 401; then this address is answered 429 without its token being compared. Sent
        // until the 429 (a slow machine may let a 1 s block run out between two requests), a bounded number of times.
        var statuses: [Int] = []
        var throttled: RawHTTPClient.Response?
        for index in 0..<40 where throttled == nil {
            let answer = try send(
                herald, "POST /v1/messages HTTP/1.1\r\n\(own)Authorization: Bearer guess-xk9-\(index)\r\n", body: "{}")
            statuses.append(answer.status)
            if answer.status == 429 { throttled = answer }
        }
        #expect(Array(statuses.prefix(5)) == [401, 401, 401, 401, 401])
        let answer = try #require(throttled, "never throttled: \(statuses)")
        #expect(Int(answer.headers["retry-after"] ?? "") ?? 0 >= 1 && answer.body.contains("TooManyRequests"))
        herald.stop()
        let failures = herald.logLines.filter { $0["msg"] as? String == "wrong token" }
        #expect(failures.count >= 5 && failures.allSatisfy { $0["client"] as? String == "127.0.0.1" }, "\(failures)")
        #expect(!herald.log.contains("guess-xk9") && !herald.log.contains("right-token-zq7"), "a token was logged")
    }

    @Test func keyFilesOthersCanReadAreWarnedAbout() throws {
        let directory = HeraldProcess.makeDirectory()
        var files: [String] = []
        for (name, mode) in [("AuthKey_ABCDE12345.p8", 0o644), ("vapid.pem", 0o640), ("private.p8", 0o600)] {
            let path = directory.appendingPathComponent(name).path
            try P256PrivateKey.generate().pkcs8PEM().write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, mode_t(mode))
            files.append(path)
        }
        let config = directory.appendingPathComponent("herald.json").path
        try """
            {"apps": [{"name": "ios", "provider": "apns", "key_file": "\(files[0])", "key_id": "ABCDE12345",
                       "team_id": "TEAM123456", "topic": "com.example.app"},
                      {"name": "web", "provider": "webpush", "vapid_private_key_file": "\(files[1])",
                       "vapid_subject": "mailto:ops@example.com"},
                      {"name": "watch", "provider": "apns", "key_file": "\(files[2])", "key_id": "ABCDE12345",
                       "team_id": "TEAM123456", "topic": "com.example.watch"}]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let herald = try HeraldProcess(directory: directory, arguments: ["--config", config])
        defer { herald.stop() }
        let warned = herald.logLines.filter {
            ($0["msg"] as? String)?.hasSuffix("can be read by other users: chmod 600 it") == true
        }
        #expect(Set(warned.compactMap { $0["file"] as? String }) == [files[0], files[1]], "\(warned)")
        #expect(Set(warned.compactMap { $0["app"] as? String }) == ["ios", "web"])
    }
}
