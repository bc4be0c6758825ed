import OAuth
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
}
