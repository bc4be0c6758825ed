import Send
import Support

extension DeliveryReason {
    /// The reason stored for a delivery whose request got no answer: the transport's own words, verbatim
    /// (`timeout`, `reset`, libcurl's text), as `deliveries.reason` has always held them.
    public init(_ failure: TransportFailure) {
        self.init(stored: failure.description)
    }
}
