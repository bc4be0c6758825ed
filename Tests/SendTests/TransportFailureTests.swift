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
        (.responseTooLarge, "response too large"),
        (.forbiddenAddress, "ForbiddenAddress"),
        (.other("Couldn't resolve host name"), "Couldn't resolve host name"),
    ])
    func describesItselfAsHeraldAlwaysHas(failure: TransportFailure, text: String) {
        #expect(failure.description == text)
        #expect(TransportFailure(describing: text) == failure)
    }
}
