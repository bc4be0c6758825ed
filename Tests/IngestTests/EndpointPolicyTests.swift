import Foundation
import HTTP
import Queue
import Storage
import Support
import Testing

@testable import Ingest
import TestSupport

/// SPEC §19 at ingest: what is refused without DNS — an address in a special range however it is spelled,
/// `localhost`, a port but 443, a host outside `trusted_push_hosts` — is a 400 naming the field, and nothing is
/// stored; names are not looked up.
@Suite struct EndpointPolicyTests {
    private let directory = TemporaryDirectory(prefix: "herald-endpoints")
    private let writer: DatabaseWriter
    private let readers: DatabaseReaders

    /// RFC 8291 Appendix A's receiver: a real P-256 point and a 16-byte auth secret.
    private static let p256dh =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    private static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    private static let keys = #""keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}"#

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
        readers = try DatabaseReaders(path: directory.path("herald.db"))
    }

    private func api(_ policy: EndpointPolicy? = nil) -> IngestAPI {
        IngestAPI(
            writer: writer, readers: readers, apiToken: nil, knownApps: ["web"], providers: ["web": .webPush],
            endpointPolicies: policy.map { ["web": $0] } ?? [:])
    }

    private func request(_ api: IngestAPI, _ method: String, _ target: String, _ body: String) -> (Int, String) {
        let responder = WaitingResponder()
        api.handle(
            HTTPRequest(method: method, target: target, headers: [], body: Array(body.utf8)), responder: responder)
        let response = responder.wait()
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    private func subscribe(_ api: IngestAPI, _ endpoint: String) -> (Int, String) {
        request(
            api, "PUT", "/v1/subscriptions",
            #"{"app":"web","subscription":{"endpoint":"\#(endpoint)",\#(Self.keys)}}"#)
    }

    private func stored() throws -> Int {
        try writer.write {
            try $0.connection.queryOne("SELECT (SELECT count(*) FROM tokens) + (SELECT count(*) FROM messages)") {
                $0.int(0)
            } ?? -1
        }
    }

    static let refusedHosts = [
        "127.0.0.1", "[::1]", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
        "224.0.0.1", "255.255.255.255", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[fe80::1]", "[fc00::1]", "[::]",
        "0x7f.0.0.1", "2130706433", "0177.0.0.1", "127.1", "localhost", "push.localhost", "LocalHost.",
    ]

    @Test(arguments: refusedHosts)
    func anAddressOutsideThePublicInternetIsRefusedInEverySpelling(host: String) throws {
        let api = api()
        let (status, body) = subscribe(api, "https://\(host)/push/1")
        #expect(status == 400, "\(host) → \(body)")
        #expect(body.contains("subscription.endpoint is refused"), "\(body)")
        let message = request(api, "POST", "/v1/messages", #"""
            {"app":"web","subscription":{"endpoint":"https://\#(host)/push/1",\#(Self.keys)},"data":{"a":"b"}}
            """#)
        #expect(message.0 == 400 && message.1.contains("subscription.endpoint is refused"), "\(message.1)")
        #expect(try stored() == 0)
    }

    @Test func aPortButHTTPSIsRefusedAndPublicHostsAreTaken() throws {
        let api = api()
        let port = subscribe(api, "https://push.example.net:8443/push/1")
        #expect(port.0 == 400 && port.1.contains("port 8443 is not 443"), "\(port.1)")
        #expect(try stored() == 0)
        for endpoint in [
            "https://fcm.googleapis.com/fcm/send/abc", "https://8.8.8.8/push/1", "https://[2001:4860::1]/push/1",
            "https://push.example.net:443/push/2",
        ] {
            #expect(subscribe(api, endpoint).0 == 201, "\(endpoint)")
        }
    }

    @Test func allowPrivateEndpointsLiftsTheAddressAndPortRules() {
        let api = api(EndpointPolicy(allowsPrivate: true))
        for endpoint in ["https://127.0.0.1:8443/push/1", "https://localhost/push/2", "https://[::1]:1/push/3"] {
            #expect(subscribe(api, endpoint).0 == 201, "\(endpoint)")
        }
    }

    @Test func trustedPushHostsRefuseEveryOtherHost() throws {
        let api = api(EndpointPolicy(trustedHosts: ["fcm.googleapis.com", "push.apple.com"]))
        #expect(subscribe(api, "https://fcm.googleapis.com/fcm/send/abc").0 == 201)
        #expect(subscribe(api, "https://web.push.apple.com/QOb").0 == 201)
        for endpoint in ["https://push.example.net/x", "https://fcm.googleapis.com.example/x", "https://apple.com/x"] {
            let (status, body) = subscribe(api, endpoint)
            #expect(status == 400 && body.contains("trusted_push_hosts"), "\(endpoint) → \(body)")
        }
        let tokens = ["https://fcm.googleapis.com/fcm/send/abc", "https://push.example.net/x"].map {
            #""\#($0)#p256dh=\#(Self.p256dh)&auth=\#(Self.auth)""#
        }
        let token = request(api, "POST", "/v1/messages", #"""
            {"app":"web","registration_ids":[\#(tokens.joined(separator: ","))],"data":{"a":"b"}}
            """#)
        #expect(token.0 == 400 && token.1.contains("target 2"), "\(token.1)")
        #expect(try stored() == 2, "the two registrations alone")
    }
}
