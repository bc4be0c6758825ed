import Ingest
import Support
import Testing

/// A subscription as `PushSubscription.toJSON()` gives it, validated, and the token the registry keeps it as.
@Suite struct WebPushSubscriptionTests {
    // RFC 8291 Appendix A's receiver: a real P-256 point and a 16-byte auth secret.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    static func json(endpoint: String = "https://fcm.googleapis.com/fcm/send/dSpAbc:APA91b", p256dh: String = p256dh,
                     auth: String = auth, extra: String = "") -> JSON {
        try! JSON.parse(Array(#"""
            {"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}\#(extra)}
            """#.utf8))
    }

    @Test func aSubscriptionBecomesATokenAndBack() throws {
        let subscription = try WebPushSubscription(json: Self.json())
        let endpoint = "https://fcm.googleapis.com/fcm/send/dSpAbc:APA91b"
        #expect(subscription.token == endpoint + "#p256dh=\(Self.p256dh)&auth=\(Self.auth)")
        #expect(subscription.origin == "https://fcm.googleapis.com")
        let back = try #require(WebPushSubscription(token: subscription.token))
        #expect(back == subscription)
        #expect(back.keys.auth.count == 16 && back.keys.p256dh.count == 65)
    }

    @Test func otherTokensAreNotSubscriptions() {
        for token in ["fcm-token-1", "https://push.example/x", "https://push.example/x#p256dh=AA&auth=BB",
                      "http://push.example/x#p256dh=\(Self.p256dh)&auth=\(Self.auth)"] {
            #expect(WebPushSubscription(token: token) == nil, "\(token)")
        }
    }

    @Test(arguments: [
        (json(endpoint: "http://push.example/x"), "https"),
        (json(endpoint: "https:///x"), "host"),
        (json(endpoint: "https://push.example/x#frag"), "fragment"),
        (json(endpoint: "https://push.example/x y"), "spaces"),
        (json(p256dh: "BCVx"), "p256dh"),
        (json(auth: "AAAA"), "auth"),
        (json(extra: #","extra":1"#), "extra"),
        (try! JSON.parse(Array(#"{"endpoint":"https://push.example/x"}"#.utf8)), "keys"),
        (JSON.string("https://push.example/x"), "object"),
    ])
    func badSubscriptionsAreRefusedSayingWhy(_ value: JSON, _ says: String) {
        #expect {
            try WebPushSubscription(json: value)
        } throws: { error in
            "\(error)".contains(says)
        }
    }

    @Test(arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc:def", "https://fcm.googleapis.com"),
        ("https://fcm.googleapis.com/wp/abc", "https://fcm.googleapis.com"),
        ("https://updates.push.services.mozilla.com/wpush/v2/gAAAA", "https://updates.push.services.mozilla.com"),
        ("https://web.push.apple.com/QGuQyavXutnMH", "https://web.push.apple.com"),
        ("https://FCM.GoogleAPIs.com/wp/AbC", "https://fcm.googleapis.com"),
        ("HTTPS://push.example.com", "https://push.example.com"),
        ("https://push.example.com:443/x", "https://push.example.com"),
        ("https://push.example.com:8443/x", "https://push.example.com:8443"),
        ("https://push.example.com?x=1", "https://push.example.com"),
        ("https://push.example.com#frag", "https://push.example.com"),
        ("http://127.0.0.1:8700/push/abc", "http://127.0.0.1:8700"),
        ("http://localhost:80/push", "http://localhost"),
        ("https://[::1]:9000/push", "https://[::1]:9000"),
        ("https://[2001:DB8::1]/push", "https://[2001:db8::1]"),
    ])
    func theOriginIsSchemeHostAndPort(endpoint: String, origin: String) {
        #expect(WebPushSubscription.origin(of: endpoint) == origin)
    }

    @Test(arguments: [
        "", "fcm.googleapis.com/wp/abc", "ftp://push.example.com/x", "wss://push.example.com", "https://",
        "https:///path", "https://user@push.example.com/x", "https://user:pw@push.example.com/x",
        "https://push.example.com:/x", "https://push.example.com:0/x", "https://push.example.com:65536/x",
        "https://push.example.com:12a/x", "https://push example.com/x", "https://[::1/x", "https://[]/x",
        "https://[::1]x/y", "https://pus%68.example.com/x",
    ])
    func aMalformedEndpointHasNoOrigin(endpoint: String) {
        #expect(WebPushSubscription.origin(of: endpoint) == nil)
    }
}
