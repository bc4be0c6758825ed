import Foundation
import HTTP
import TestSupport
import Queue
import Storage
import Support
import Testing

@testable import Ingest

/// Per-tenant API tokens (SPEC §22) through `IngestAPI` on a real database: each role against each route, in every
/// ingest dialect, with nothing stored when a token is refused.
@Suite struct TenantTokenTests {
    private let directory = TemporaryDirectory(prefix: "herald-tenants")
    private let writer: DatabaseWriter
    private let readers: DatabaseReaders
    private let tokens = APITokens()
    private let api: IngestAPI
    private static let admin = "the-admin-token"

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
        readers = try DatabaseReaders(path: directory.path("herald.db"))
        try writer.write { store in
            for app in ["default", "shop", "news"] { try store.ensureApp(app) }
        }
        api = IngestAPI(
            writer: writer, readers: readers, apiToken: Self.admin, tenants: tokens,
            knownApps: ["default", "shop", "news"], projects: ["shop-project": "shop", "news-project": "news"])
    }

    /// A token made as `herald api-tokens create` makes one, stored and honoured; its secret.
    private func issue(_ role: APITokenRole, apps: [String]) throws -> String {
        let (record, secret) = try APITokenSecret.issue(apps: apps, role: role, name: nil, now: Clock.nowMillis())
        try writer.write { try $0.createAPIToken(record) }
        tokens.add(record)
        return secret
    }

    /// The public id a secret carries: `hrld_<id>_…`.
    private func id(of secret: String) -> String {
        String(secret.dropFirst(APITokenSecret.prefix.count).prefix(12))
    }

    private func request(
        _ method: String, _ target: String, _ body: String = "", secret: String?, scheme: String = "Bearer ",
        headers: [(name: String, value: String)] = []
    ) -> HTTPResponse {
        var all: [(name: String, value: String)] = [("content-type", "application/json")] + headers
        if let secret { all.append(("authorization", scheme + secret)) }
        return exchange(HTTPRequest(method: method, target: target, headers: all, body: Array(body.utf8)), with: api)
    }

    private func count(_ table: String) throws -> Int {
        try writer.write { try $0.connection.queryOne("SELECT count(*) FROM \(table)") { $0.int(0) } ?? -1 }
    }

    private func stored() throws -> [Int] {
        try ["messages", "deliveries", "tokens"].map(count)
    }

    private func message(app: String) throws -> String {
        let reply = request("POST", "/v1/messages", #"{"to":"seed","app":"\#(app)"}"#, secret: Self.admin)
        let object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
        return try #require(object?["id"] as? String)
    }

    private func appOfLatestMessage() throws -> String? {
        try writer.write { try $0.connection.queryOne("SELECT app FROM messages ORDER BY id DESC") { $0.string(0) } }
    }

    // MARK: - Each role against each route

    /// One call of every route a tenant may make, for app `shop`; `status` is the admin's answer to it.
    private func routes() throws -> [(name: String, call: (String) -> HTTPResponse, role: APITokenRole, ok: Int)] {
        let message = try message(app: "shop")
        try writer.write { store in
            for device in ["looked-up", "deleted"] { try store.registerToken(device, app: "shop", user: nil, now: 1) }
        }
        return [
            ("POST /v1/messages", { request("POST", "/v1/messages", #"{"to":"a","app":"shop"}"#, secret: $0) },
             .send, 202),
            ("POST /v1/messages v1", {
                request("POST", "/v1/messages", #"{"message":{"token":"b"},"app":"shop"}"#, secret: $0)
            }, .send, 202),
            ("POST /v1/messages/batch", {
                request("POST", "/v1/messages/batch", #"{"messages":[{"to":"c","app":"shop"}]}"#, secret: $0)
            }, .send, 200),
            ("POST /fcm/send", {
                request("POST", "/fcm/send", #"{"to":"d"}"#, secret: $0, scheme: "key=",
                        headers: [("x-herald-app", "shop")])
            }, .send, 200),
            ("POST messages:send", {
                request("POST", "/v1/projects/shop-project/messages:send", #"{"message":{"token":"e"}}"#, secret: $0)
            }, .send, 200),
            ("DELETE /v1/messages/{id}", { request("DELETE", "/v1/messages/\(message)", secret: $0) }, .send, 200),
            ("PUT /v1/tokens/{token}", { request("PUT", "/v1/tokens/new", #"{"app":"shop"}"#, secret: $0) },
             .register, 201),
            ("GET /v1/tokens/{token}", { request("GET", "/v1/tokens/looked-up", secret: $0) }, .register, 200),
            ("DELETE /v1/tokens/{token}", { request("DELETE", "/v1/tokens/deleted", secret: $0) }, .register, 204),
            // Refused by validation (400) once past the token: the route is open to the role.
            ("PUT /v1/subscriptions", { request("PUT", "/v1/subscriptions", #"{"app":"shop"}"#, secret: $0) },
             .register, 400),
            ("GET /v1/messages/{id}", { request("GET", "/v1/messages/\(message)", secret: $0) }, .read, 200),
            ("GET /v1/token-events", { request("GET", "/v1/token-events", secret: $0) }, .read, 200),
        ]
    }

    @Test(arguments: APITokenRole.allCases)
    func eachRoleCallsItsRoutesAndGets403OnTheOthersWithNothingStored(role: APITokenRole) throws {
        let secret = try issue(role, apps: ["shop"])
        for route in try routes() {
            let before = try stored()
            let answer = route.call(secret)
            if route.role == role {
                #expect(answer.status == route.ok, "\(role) \(route.name)")
            } else {
                #expect(answer.status == 403, "\(role) \(route.name)")
                #expect(try stored() == before, "\(role) \(route.name)")
            }
        }
    }

    @Test func theRoleTableNamesEveryTenantRouteOnceAndNothingElse() {
        #expect(RouteAccess.of(method: "POST", segments: ["v1", "messages"])?.role == .send)
        #expect(RouteAccess.of(method: "POST", segments: ["v1", "messages", "batch"])?.app == .body)
        #expect(RouteAccess.of(method: "DELETE", segments: ["v1", "messages", "m"])?.role == .send)
        #expect(RouteAccess.of(method: "GET", segments: ["v1", "messages", "m"])?.role == .read)
        #expect(RouteAccess.of(method: "POST", segments: ["fcm", "send"])?.app == .header("x-herald-app"))
        #expect(RouteAccess.of(method: "POST", segments: ["v1", "projects", "p", "messages:send"])?.app == .project)
        #expect(RouteAccess.of(method: "GET", segments: ["v1", "tokens", "t"])?.role == .register)
        #expect(RouteAccess.of(method: "GET", segments: ["v1", "token-events"])?.app == .feed)
        for (method, segments) in [
            ("GET", ["metrics"]), ("GET", ["v1", "tokens", ""]), ("GET", ["v1", "admin", "overview"]),
            ("PATCH", ["v1", "messages"]), ("GET", ["console"]), ("GET", ["v1", "messages", "a", "b"]),
        ] {
            #expect(RouteAccess.of(method: method, segments: segments) == nil, "\(method) \(segments)")
        }
        let keys = RouteAccess.routes.map { "\($0.method) \($0.path)" }
        #expect(Set(keys).count == keys.count)
    }

    @Test func adminRoutesNeedTheAdminToken() throws {
        let secret = try issue(.read, apps: ["shop"])
        #expect(request("GET", "/metrics", secret: secret).status == 403)
        #expect(request("GET", "/metrics", secret: Self.admin).status == 200)
        #expect(request("GET", "/healthz", secret: nil).status == 200)
    }

    @Test func theAdminTokenStillCallsEveryRouteForEveryApp() throws {
        _ = try issue(.send, apps: ["shop"])
        #expect(request("POST", "/v1/messages", #"{"to":"a","app":"news"}"#, secret: Self.admin).status == 202)
        #expect(request("PUT", "/v1/tokens/x", #"{"app":"news"}"#, secret: Self.admin).status == 201)
        #expect(request("GET", "/v1/token-events", secret: Self.admin).status == 200)
    }

    // MARK: - Apps

    @Test func everyDialectRefusesAnotherAppWith403AndStoresNothing() throws {
        let secret = try issue(.send, apps: ["shop"])
        let before = try stored()
        let herald = request("POST", "/v1/messages", #"{"to":"a","app":"news"}"#, secret: secret)
        #expect(herald.status == 403)
        #expect(String(decoding: herald.body, as: UTF8.self).contains(#""code":"Forbidden""#))
        #expect(request("POST", "/v1/messages", #"{"message":{"token":"b"},"app":"news"}"#, secret: secret).status
            == 403)
        // One item for another app refuses the whole batch.
        let mixed = #"{"messages":[{"to":"c","app":"shop"},{"to":"d","app":"news"}]}"#
        #expect(request("POST", "/v1/messages/batch", mixed, secret: secret).status == 403)
        let legacy = request("POST", "/fcm/send", #"{"to":"e"}"#, secret: secret, scheme: "key=",
                             headers: [("x-herald-app", "news")])
        #expect(legacy.status == 403)
        #expect(legacy.header("content-type")?.hasPrefix("text/plain") == true)
        let v1 = request("POST", "/v1/projects/news-project/messages:send", #"{"message":{"token":"f"}}"#,
                         secret: secret)
        #expect(v1.status == 403)
        #expect(String(decoding: v1.body, as: UTF8.self).contains("PERMISSION_DENIED"))
        #expect(try stored() == before)
    }

    @Test func aRouteThatNamesTheAppInItsHeadIsRefusedBeforeTheBody() throws {
        let secret = try issue(.send, apps: ["shop"])
        func head(_ target: String, _ headers: [(name: String, value: String)]) -> HTTPRequest {
            HTTPRequest(method: "POST", target: target, headers: headers + [("content-length", "1000")])
        }
        #expect(api.admit(head("/fcm/send", [("authorization", "key=" + secret), ("x-herald-app", "news")]))?.status
            == 403)
        #expect(api.admit(head("/v1/projects/news-project/messages:send", [("authorization", "Bearer " + secret)]))?
            .status == 403)
        #expect(api.admit(head("/v1/messages/batch", [("authorization", "Bearer " + secret)])) == nil)
        let reader = try issue(.read, apps: ["shop"])
        #expect(api.admit(head("/v1/messages", [("authorization", "Bearer " + reader)]))?.status == 403)
    }

    @Test func aMessageWithoutAppGoesToTheTokensOnlyApp() throws {
        let secret = try issue(.send, apps: ["shop"])
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: secret).status == 202)
        #expect(try appOfLatestMessage() == "shop")
        #expect(request("POST", "/v1/messages", #"{"users":["u1"]}"#, secret: secret).status == 202)
        #expect(try appOfLatestMessage() == "shop")
        #expect(request("POST", "/v1/messages", #"{"message":{"token":"b"}}"#, secret: secret).status == 202)
        #expect(try appOfLatestMessage() == "shop")
        #expect(request("POST", "/fcm/send", #"{"to":"c"}"#, secret: secret, scheme: "key=").status == 200)
        #expect(try appOfLatestMessage() == "shop")
        #expect(request("PUT", "/v1/tokens/dev", "", secret: try issue(.register, apps: ["shop"])).status == 201)
        #expect(try writer.write { try $0.token("dev")?.app } == "shop")
    }

    @Test func aMessageWithoutAppIsRefusedForATokenOfSeveralApps() throws {
        let secret = try issue(.send, apps: ["shop", "news"])
        let before = try stored()
        let answer = request("POST", "/v1/messages", #"{"to":"a"}"#, secret: secret)
        #expect(answer.status == 400)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("name the app"))
        #expect(request("POST", "/fcm/send", #"{"to":"b"}"#, secret: secret, scheme: "key=").status == 400)
        #expect(try stored() == before)
        #expect(request("POST", "/v1/messages", #"{"to":"a","app":"news"}"#, secret: secret).status == 202)
        #expect(request("POST", "/v1/messages", #"{"to":"a","app":"shop"}"#, secret: secret).status == 202)
    }

    @Test func recordsOfAnotherAppAreNeitherReadNorChanged() throws {
        let news = try message(app: "news")
        try writer.write { try $0.registerToken("news-device", app: "news", user: nil, now: 1) }
        let reader = try issue(.read, apps: ["shop"])
        let sender = try issue(.send, apps: ["shop"])
        let registrar = try issue(.register, apps: ["shop"])
        #expect(request("GET", "/v1/messages/\(news)", secret: reader).status == 403)
        #expect(request("DELETE", "/v1/messages/\(news)", secret: sender).status == 403)
        #expect(try writer.write { try $0.message(id: news)?.deliveries.map(\.state) } == [.queued])
        #expect(request("GET", "/v1/tokens/news-device", secret: registrar).status == 403)
        #expect(request("DELETE", "/v1/tokens/news-device", secret: registrar).status == 403)
        // Registering it again would move it out of app news.
        #expect(request("PUT", "/v1/tokens/news-device", #"{"app":"shop"}"#, secret: registrar).status == 403)
        #expect(try writer.write { try $0.token("news-device")?.app } == "news")
    }

    @Test func theTokenEventFeedHoldsOnlyTheTokensApps() throws {
        try writer.write { store in
            for (index, app) in ["shop", "news", "shop"].enumerated() {
                try store.connection.run(
                    "INSERT INTO token_events (at, app, token, kind) VALUES (?, ?, ?, 'deleted')",
                    .integer(Int64(index)), .text(app), .text("t\(index)"))
            }
        }
        let reader = try issue(.read, apps: ["shop"])
        let feed = request("GET", "/v1/token-events?limit=10", secret: reader)
        let object = try JSONSerialization.jsonObject(with: Data(feed.body)) as? [String: Any]
        let events = try #require(object?["events"] as? [[String: Any]])
        #expect(events.map { $0["token"] as? String } == ["t0", "t2"])
    }

    // MARK: - Revocation, refresh, last use

    @Test func aRevocationHoldsFromTheNextRequest() throws {
        let secret = try issue(.send, apps: ["shop"])
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: secret).status == 202)
        tokens.revoke(id: id(of: secret))
        let answer = request("POST", "/v1/messages", #"{"to":"a"}"#, secret: secret)
        #expect(answer.status == 401)
        #expect(answer.header("WWW-Authenticate") == "Bearer")
    }

    @Test func aRefreshTakesRevocationsAndNewTokensFromTheDatabaseAndWritesLastUse() throws {
        let secret = try issue(.send, apps: ["shop"])
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: secret).status == 202)
        // Made, and the first revoked, elsewhere (another instance, `herald api-tokens`).
        let (other, otherSecret) = try APITokenSecret.issue(apps: ["news"], role: .send, name: "n", now: 1)
        try writer.write { try $0.createAPIToken(other) }
        _ = try writer.write { [id = id(of: secret)] in try $0.revokeAPIToken(id: id, now: 2) }
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: otherSecret).status == 401)
        try refresh(readers)
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: secret).status == 401)
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: otherSecret).status == 202)
        let used = try writer.write { try $0.apiTokens(activeOnly: false).map(\.lastUsedAt) }
        #expect(used.count == 2 && used[1] != nil && used[0] == nil)
    }

    /// Runs one refresh through `readers` and waits for it, and for the use it wrote.
    private func refresh(_ readers: any StoreReaders) throws {
        let done = DispatchSemaphore(value: 0)
        tokens.refresh(readers: readers, writer: writer) { done.signal() }
        #expect(done.wait(timeout: .now() + 30) == .success)
        // The uses are written by a job queued before the read: wait for the writer to pass it.
        try writer.write { _ in }
    }

    @Test func aRefreshThatReadBeforeARevocationHereDoesNotBringTheTokenBack() throws {
        let secret = try issue(.send, apps: ["shop"])
        let held = HeldReads(readers)
        let done = DispatchSemaphore(value: 0)
        tokens.refresh(readers: held, writer: writer) { done.signal() }
        held.waitUntilRead()
        tokens.revoke(id: id(of: secret))
        held.release()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: secret).status == 401)
    }

    @Test func wrongTenantTokensCountAsGuesses() throws {
        _ = try issue(.send, apps: ["shop"])
        let forged = APITokenSecret.prefix + "000000000000_" + String(repeating: "A", count: 43)
        for _ in 0..<GuessThrottle.allowedFailures {
            #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: forged).status == 401)
        }
        #expect(request("POST", "/v1/messages", #"{"to":"a"}"#, secret: forged).status == 429)
    }

    // MARK: - The secret

    @Test func aSecretIsRecognisableAndOnlyItsHashIsStored() throws {
        let secret = try issue(.send, apps: ["shop"])
        let record = try #require(try writer.write { try $0.apiTokens(activeOnly: true).first })
        #expect(secret.hasPrefix("hrld_\(record.id)_"))
        #expect(secret.utf8.count == APITokenSecret.length)
        #expect(record.id.utf8.count == 12 && record.id.allSatisfy(\.isHexDigit))
        #expect(record.secretSHA256 == APITokenSecret.hex(try #require(APITokenSecret.digest(Array(secret.utf8)))))
        #expect(record.secretSHA256.count == 64)
        for file in ["herald.db", "herald.db-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: directory.path(file)))) ?? Data()
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file)")
            #expect(bytes.range(of: Data(secret.utf8.dropFirst(18))) == nil, "\(file)")
        }
    }

    @Test func issuingChecksAppsAndNames() throws {
        #expect(throws: APIError.self) { try APITokenSecret.issue(apps: [], role: .send, name: nil, now: 1) }
        #expect(throws: APIError.self) { try APITokenSecret.issue(apps: ["a,b"], role: .send, name: nil, now: 1) }
        #expect(throws: APIError.self) { try APITokenSecret.issue(apps: ["a"], role: .send, name: "x\n", now: 1) }
        let (record, first) = try APITokenSecret.issue(apps: ["a", "b", "a"], role: .read, name: "t", now: 1)
        #expect(record.apps == ["a", "b"])
        let (_, second) = try APITokenSecret.issue(apps: ["a"], role: .read, name: nil, now: 1)
        #expect(first != second)
        #expect(throws: UnknownAppsError.self) {
            try writer.write { try $0.createAPIToken(record) }
        }
        #expect(try writer.write { try $0.apiTokens(activeOnly: false) }.isEmpty)
    }
}

/// Readers whose answers wait until released: a read that finished before something happened, answered after.
private final class HeldReads: StoreReaders, @unchecked Sendable {
    private let inner: any StoreReaders
    private let read = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var answer: (() -> Void)?

    init(_ inner: any StoreReaders) { self.inner = inner }

    func enqueue<T>(
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        nonisolated(unsafe) let completion = completion
        inner.enqueue(work) { [self] result in
            nonisolated(unsafe) let result = result
            lock.withLock { answer = { completion(result) } }
            read.signal()
        }
    }

    func waitUntilRead() { _ = read.wait(timeout: .now() + 30) }
    func release() { lock.withLock { answer }?() }
    func close() { inner.close() }
}
