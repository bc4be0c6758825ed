import Send
import Testing

@Suite struct TransportFailureTests {
    /// These texts are stored in `deliveries.reason` and counted as `herald_fcm_requests_total{code}`: users script
    /// against them, so they never change.
    @Test(arguments: [
        (TransportFailure.timeout, "timeout"),
        (.connect, "connect"),
        (.reset, "reset"),
        (.cancelled, "cancelled"),
        (.responseTooLarge, "ResponseTooLarge"),
        (.forbiddenAddress, "ForbiddenAddress"),
        (.other("Couldn't resolve host name"), "Couldn't resolve host name"),
    ])
    func describesItselfAsHeraldAlwaysHas(failure: TransportFailure, text: String) {
        #expect(failure.description == text)
        #expect(TransportFailure(describing: text) == failure)
    }

    /// Rows stored before SPEC §19 named it hold its old text.
    @Test func readsResponseTooLargesOldText() {
        #expect(TransportFailure(describing: "response too large") == .responseTooLarge)
    }
}
