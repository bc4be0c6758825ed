import Ingest
import Support
import Testing

@Suite struct BatchValidationTests {
    private func batchError(_ text: String) -> String? {
        if case .failure(let error) = MessageValidator.validateBatch(body: Array(text.utf8)) { error.code } else { nil }
    }

    @Test(arguments: [
        ("", "InvalidJson"), ("[]", "InvalidJson"), (#"[{"to":"t"}]"#, "InvalidJson"), ("{", "InvalidJson"),
        ("{}", "InvalidParameters"), (#"{"messages":{}}"#, "InvalidParameters"),
        (#"{"messages":null}"#, "InvalidParameters"), (#"{"messages":[]}"#, "InvalidParameters"),
        (#"{"messages":[{"to":"t"}],"extra":1}"#, "InvalidParameters"),
        (#"{"to":"t"}"#, "InvalidParameters"),
    ] as [(String, String)])
    func bodiesOfTheWrongShapeAreOneError(text: String, code: String) {
        #expect(batchError(text) == code)
    }

    @Test func eachItemIsValidatedInOrder() throws {
        let text = #"{"messages":[{"to":"a"},{"to":"b","time_to_live":-1},5,"#
            + #"{"to":"/topics/news","data":{"k":"v"}},{"registration_ids":[]}]}"#
        let results = try MessageValidator.validateBatch(body: Array(text.utf8)).get()
        #expect(results.count == 5)
        #expect(try results[0].get().target == .tokens(["a"]))
        #expect(errorCode(results[1]) == "InvalidTtl")
        #expect(errorCode(results[2]) == "InvalidJson")
        #expect(try results[3].get().target == .topic("/topics/news"))
        #expect(try results[3].get().payload == ["data": ["k": "v"]])
        #expect(errorCode(results[4]) == "MissingRegistration")
    }

    @Test func itemsMatchSingleValidation() throws {
        let item = #"{"app":"shop","users":["u1","u1"],"priority":"high","data":{"a":"1"}}"#
        let results = try MessageValidator.validateBatch(body: Array("{\"messages\":[\(item)]}".utf8)).get()
        #expect(results == [validate(item)])
    }
}
