import Ingest
import Support
import Testing

@Suite struct BodyShapeTests {
    @Test(arguments: ["", "not json", "[1]", #""text""#, "null", "42", #"{"to":"a"} x"#, #"{"to":"a","#])
    func nonObjectsAndMalformedBodiesAreInvalidJson(text: String) {
        #expect(errorCode(text) == "InvalidJson")
    }

    @Test func invalidUTF8IsInvalidJson() {
        let bytes: [UInt8] = Array(#"{"to":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        guard case .failure(let error) = MessageValidator.validate(body: bytes) else {
            Issue.record("accepted invalid UTF-8")
            return
        }
        #expect(error.code == "InvalidJson")
        #expect(error.status == 400)
        #expect(error.message.contains("UTF-8"))
    }

    @Test func validateObjectRejectsNonObjects() {
        #expect(errorCode(MessageValidator.validate(object: .array([]))) == "InvalidJson")
    }

    @Test func unknownFieldIsNamed() {
        guard case .failure(let error) = validate(#"{"to":"tok","time_to_liv":60}"#) else {
            Issue.record("accepted an unknown field")
            return
        }
        #expect(error == .invalidParameters(#"unknown field "time_to_liv""#))
    }

    @Test func fieldNamesAreCaseSensitive() {
        #expect(errorCode(#"{"To":"tok"}"#) == "InvalidParameters")
    }
}

@Suite struct TargetTests {
    @Test(arguments: [
        #"{}"#, #"{"data":{"a":"1"}}"#, #"{"to":""}"#, #"{"registration_ids":[]}"#, #"{"users":[]}"#,
        #"{"condition":""}"#,
    ])
    func missingOrEmptyTargetIsMissingRegistration(text: String) {
        #expect(errorCode(text) == "MissingRegistration")
    }

    @Test(arguments: [
        #"{"to":"a","registration_ids":["b"]}"#,
        #"{"to":"a","condition":"'x' in topics"}"#,
        #"{"registration_ids":["a"],"users":["u"]}"#,
        #"{"to":"","registration_ids":[]}"#,
        #"{"to":"a","registration_ids":["b"],"condition":"'x' in topics","users":["u"]}"#,
    ])
    func moreThanOneTargetIsInvalidParameters(text: String) {
        #expect(errorCode(text) == "InvalidParameters")
    }

    @Test(arguments: [
        #"{"to":5}"#, #"{"to":null}"#, #"{"to":["a"]}"#,
        #"{"registration_ids":"a"}"#, #"{"registration_ids":["a",1]}"#, #"{"registration_ids":["a",""]}"#,
        #"{"registration_ids":[null]}"#, #"{"users":"u"}"#, #"{"users":["u",{}]}"#, #"{"users":[""]}"#,
        #"{"condition":true}"#,
    ])
    func targetOfTheWrongTypeIsInvalidParameters(text: String) {
        #expect(errorCode(text) == "InvalidParameters")
    }

    @Test func singleTokenTarget() {
        #expect(accepted(#"{"to":"fXk3:APA91b"}"#)?.target == .tokens(["fXk3:APA91b"]))
    }

    @Test func moreThanAThousandTokensAreAccepted() {
        let tokens = (0..<1001).map { "token-\($0)" }
        let text = body(["registration_ids": .array(tokens.map(JSON.string))])
        #expect(accepted(text)?.target == .tokens(tokens))
    }

    @Test func duplicateTokensAndUsersAreDroppedKeepingFirstOrder() {
        #expect(accepted(#"{"registration_ids":["b","a","b","c","a"]}"#)?.target == .tokens(["b", "a", "c"]))
        #expect(accepted(#"{"users":["u2","u1","u2"]}"#)?.target == .users(["u2", "u1"]))
    }

    @Test func tokensThatOnlyLookAlikeAreKeptApart() {
        // Precomposed and decomposed "é" are equal Swift Strings but different bytes, hence different ids.
        let text = body(["users": ["\u{E9}", "e\u{301}"]])
        #expect(accepted(text)?.target == .users(["\u{E9}", "e\u{301}"]))
    }

    @Test(arguments: ["/topics/news", "/topics/a-b_c.d~e%20", "/topics/X9"])
    func topicTargetsAreKeptAsGiven(to: String) {
        #expect(accepted(body(["to": .string(to)]))?.target == .topic(to))
    }

    @Test(arguments: ["/topics/", "/topics/a b", "/topics/caf\u{E9}", "/topics/a/b", "/topics/a:b"])
    func malformedTopicNamesAreInvalidParameters(to: String) {
        #expect(errorCode(body(["to": .string(to)])) == "InvalidParameters")
    }

    @Test func onlyTheExactTopicPrefixMakesATopic() {
        #expect(accepted(#"{"to":"/Topics/news"}"#)?.target == .tokens(["/Topics/news"]))
    }
}

@Suite struct ConditionTests {
    @Test(arguments: [
        "'a' in topics",
        "'a' in topics && 'b' in topics",
        "'a' in topics && ('b' in topics || 'c' in topics)",
        "('a' in topics || 'b' in topics) && 'c' in topics",
        "'a' in topics||'b' in topics",
        "\"a\" in topics",
        "  ( ( 'stock-GOOG' in topics ) )  ",
    ])
    func conditionsWithUpToTwoOperatorsAreAccepted(condition: String) {
        #expect(accepted(body(["condition": .string(condition)]))?.target == .condition(condition))
    }

    @Test func threeOperatorsAreTooMany() {
        let condition = "'a' in topics && 'b' in topics && 'c' in topics || 'd' in topics"
        guard case .failure(let error) = validate(body(["condition": .string(condition)])) else {
            Issue.record("accepted three operators")
            return
        }
        #expect(error.code == "InvalidParameters")
        #expect(error.message.contains("3 operators"))
        #expect(errorCode(body(["condition": "'a' in topics && 'b' in topics && 'c' in topics"])) == nil)
        #expect(errorCode(body(["condition": "('a' in topics || 'b' in topics) && ('c' in topics || 'd' in topics)"]))
            == "InvalidParameters")
    }

    @Test(arguments: [
        "a in topics", "'a' in topics &&", "&& 'a' in topics", "'a' in topics & 'b' in topics",
        "'a' in topics 'b' in topics", "'a b' in topics", "'a' in topics)", "('a' in topics", "()",
        "!('a' in topics)", "'a' in TOPICS", "topics", "'a'", "'a' in", "'a' in topics && ()",
        "'a\" in topics", "'' in topics", "'a' in topics && 'b' in ",
        String(repeating: "(", count: 20) + "'a' in topics" + String(repeating: ")", count: 20),
    ])
    func malformedConditionsAreInvalidParameters(condition: String) {
        #expect(errorCode(body(["condition": .string(condition)])) == "InvalidParameters")
    }
}

@Suite struct OptionTests {
    @Test(arguments: [
        #""collapse_key":1"#, #""restricted_package_name":true"#, #""content_available":"true""#,
        #""mutable_content":1"#, #""delay_while_idle":null"#, #""dry_run":"yes""#, #""data":[]"#,
        #""notification":"hi""#, #""data":null"#, #""priority":"urgent""#, #""priority":"HIGH""#,
        #""priority":10"#, #""app":"""#, #""app":"a b""#, #""app":5"#, #""app":"caf\u00e9""#,
    ])
    func optionsOfTheWrongTypeOrValueAreInvalidParameters(option: String) {
        #expect(errorCode("{\"to\":\"tok\",\(option)}") == "InvalidParameters")
    }

    @Test func appLengthBoundary() {
        let longest = String(repeating: "a", count: 100)
        #expect(accepted(body(["to": "t", "app": .string(longest)]))?.app == longest)
        #expect(errorCode(body(["to": "t", "app": .string(longest + "a")])) == "InvalidParameters")
        #expect(accepted(#"{"to":"t","app":"Shop-2.eu_west"}"#)?.app == "Shop-2.eu_west")
    }

    @Test func defaults() {
        let message = accepted(#"{"to":"tok"}"#)
        #expect(message == IncomingMessage(
            app: "default", target: .tokens(["tok"]), payload: [:], collapseKey: nil, priority: .normal,
            ttlSeconds: 2_419_200, dryRun: false))
    }

    @Test func optionsAreRead() {
        let message = accepted(
            #"{"to":"tok","app":"shop","collapse_key":"score","priority":"high","time_to_live":60,"dry_run":true}"#)
        #expect(message?.app == "shop")
        #expect(message?.collapseKey == "score")
        #expect(message?.priority == .high)
        #expect(message?.ttlSeconds == 60)
        #expect(message?.dryRun == true)
    }

    @Test func payloadKeepsOptionsInOrderAndDropsTargetAndApp() {
        let text = #"{"priority":"high","app":"shop","data":{"b":"2","a":"1"},"registration_ids":["t1","t2"],"#
            + #""time_to_live":0,"notification":{"title":"Hi"},"content_available":true,"collapse_key":"c"}"#
        #expect(accepted(text)?.payload.serialized()
            == #"{"priority":"high","data":{"b":"2","a":"1"},"time_to_live":0,"notification":{"title":"Hi"},"#
            + #""content_available":true,"collapse_key":"c"}"#)
        #expect(accepted(#"{"users":["u"],"dry_run":false}"#)?.payload == ["dry_run": false])
        #expect(accepted(#"{"condition":"'a' in topics"}"#)?.payload == [:])
    }
}

@Suite struct TimeToLiveTests {
    @Test(arguments: [("0", 0), ("60", 60), ("2419200", 2_419_200)] as [(String, Int)])
    func integersInRangeAreAccepted(lexeme: String, seconds: Int) {
        #expect(accepted("{\"to\":\"tok\",\"time_to_live\":\(lexeme)}")?.ttlSeconds == seconds)
    }

    @Test(arguments: [
        "2419201", "-1", "10.0", "1e3", "0.5", "-0.0", #""10""#, "null", "true", "[60]",
        "99999999999999999999",
    ])
    func anythingElseIsInvalidTtl(lexeme: String) {
        let result = validate("{\"to\":\"tok\",\"time_to_live\":\(lexeme)}")
        #expect(errorCode(result) == "InvalidTtl", "\(lexeme)")
        if case .failure(let error) = result { #expect(error.message.contains("time_to_live")) }
    }
}

@Suite struct DataKeyTests {
    @Test(arguments: ["from", "message_type", "google", "google.x", "gcm", "gcm.y", "gcmx"])
    func reservedKeysAreInvalidDataKey(key: String) {
        let result = validate(body(["to": "tok", "data": JSON(members: [(key, .string("v"))])]))
        #expect(errorCode(result) == "InvalidDataKey")
        if case .failure(let error) = result { #expect(error.message.contains("\"\(key)\"")) }
    }

    @Test(arguments: ["xgoogle", "From", "Google.x", "GCM", "fromage", "message_type2", "to", "collapse_key"])
    func otherKeysAreAccepted(key: String) {
        #expect(accepted(body(["to": "tok", "data": JSON(members: [(key, .string("v"))])])) != nil)
    }

    @Test func notificationKeysAreNotChecked() {
        #expect(accepted(#"{"to":"tok","notification":{"from":"x","google.y":"z"}}"#) != nil)
    }
}

@Suite struct PayloadSizeTests {
    /// `{"k":"xxx…"}` serializing to exactly `size` bytes.
    private func data(ofSize size: Int) -> JSON {
        let value: JSON = ["k": .string(String(repeating: "x", count: size - 8))]
        return value
    }

    private func message(_ target: (String, JSON), data: JSON, notification: JSON? = nil) -> String {
        var members: [(String, JSON)] = [target, ("data", data)]
        if let notification { members.append(("notification", notification)) }
        return body(JSON(members: members))
    }

    static let deviceTargets: [(String, JSON)] = [
        ("to", "tok"), ("registration_ids", ["a", "b"]), ("users", ["u"]),
    ]
    static let topicTargets: [(String, JSON)] = [
        ("to", "/topics/news"), ("condition", "'a' in topics || 'b' in topics"),
    ]

    @Test(arguments: deviceTargets)
    func devicePayloadLimitIs4096Bytes(target: (String, JSON)) {
        #expect(data(ofSize: 4096).serialized().utf8.count == 4096)
        #expect(errorCode(message(target, data: data(ofSize: 4096))) == nil)
        #expect(errorCode(message(target, data: data(ofSize: 4097))) == "MessageTooBig")
    }

    @Test(arguments: topicTargets)
    func topicAndConditionPayloadLimitIs2048Bytes(target: (String, JSON)) {
        #expect(data(ofSize: 2048).serialized().utf8.count == 2048)
        #expect(errorCode(message(target, data: data(ofSize: 2048))) == nil)
        #expect(errorCode(message(target, data: data(ofSize: 2049))) == "MessageTooBig")
    }

    @Test func dataAndNotificationCountTogether() {
        let notification: JSON = ["title": .string(String(repeating: "t", count: 1000 - 12))]
        #expect(notification.serialized().utf8.count == 1000)
        #expect(errorCode(message(("to", "tok"), data: data(ofSize: 3096), notification: notification)) == nil)
        #expect(errorCode(message(("to", "tok"), data: data(ofSize: 3097), notification: notification))
            == "MessageTooBig")
        let tooBigAlone = body(["to": "tok", "notification": .object([(key: "b", value: .string(
            String(repeating: "n", count: 4097 - 8)))])])
        #expect(errorCode(tooBigAlone) == "MessageTooBig")
    }

    @Test func sizeIsOfTheCompactSerializationNotTheBody() {
        // Whitespace and escapes in the body do not count: "\u0078" is one byte once parsed.
        let padded = "{\"to\":\"tok\",\"data\":{  \"k\" :  \""
            + String(repeating: "\\u0078", count: 4088) + "\"  }}"
        #expect(padded.utf8.count > 4096 * 5)
        #expect(errorCode(padded) == nil)
    }

    @Test func tooBigMessageStatesTheSizeAndLimit() {
        guard case .failure(let error) = validate(message(("to", "/topics/a"), data: data(ofSize: 2049))) else {
            Issue.record("accepted")
            return
        }
        #expect(error.message.contains("2049"))
        #expect(error.message.contains("2048"))
    }
}

@Suite struct PrecedenceTests {
    @Test(arguments: [
        (#"{"nope":1}"#, "InvalidParameters"),                                        // unknown field before target
        (#"{"to":"t","priority":"x","time_to_live":-1}"#, "InvalidParameters"),       // options before TTL
        (#"{"to":"t","time_to_live":-1,"data":{"from":"x"}}"#, "InvalidTtl"),          // TTL before data keys
        (#"{"to":5,"time_to_live":-1}"#, "InvalidParameters"),                        // target before TTL
        (#"{"time_to_live":-1}"#, "MissingRegistration"),                             // target before TTL
        (#"{"to":"t","app":"","time_to_live":-1}"#, "InvalidParameters"),             // app before TTL
    ] as [(String, String)])
    func firstBrokenRuleWins(text: String, code: String) {
        #expect(errorCode(text) == code)
    }

    @Test func reservedKeyBeatsSize() {
        let big = String(repeating: "x", count: 5000)
        #expect(errorCode(body(["to": "t", "data": ["gcm.k": .string(big)]])) == "InvalidDataKey")
    }
}

@Suite struct APIErrorTests {
    @Test func jsonBodyCarriesCodeAndEscapedMessage() {
        let error = APIError.invalidParameters(#"unknown field "a\b""#)
        #expect(error.status == 400)
        #expect(error.jsonBody == #"{"error":{"code":"InvalidParameters","message":"unknown field \"a\\b\""}}"#)
    }

    @Test(arguments: [
        (APIError.unauthorized("x"), 401, "Unauthorized"), (.notFound("x"), 404, "NotFound"),
        (.payloadTooLarge("x"), 413, "PayloadTooLarge"), (.unavailable("x"), 503, "Unavailable"),
        (.invalidJSON("x"), 400, "InvalidJson"), (.messageTooBig("x"), 400, "MessageTooBig"),
    ] as [(APIError, Int, String)])
    func heraldErrorsHaveTheirStatus(error: APIError, status: Int, code: String) {
        #expect(error.status == status)
        #expect(error.code == code)
    }
}
