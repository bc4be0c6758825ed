import Ingest
import Posix

/// What a Web Push app takes as a subscription's endpoint at ingest (SPEC §19): refused at once (400, nothing stored)
/// is what its `AddressPolicy` refuses without DNS — an address in a special range however it is spelled,
/// `localhost`, a port but 443 — and, when the app names `trusted_push_hosts`, a host that is none of them or below
/// them. No name is looked up here: the pool checks every address a name gives when it connects.
///
/// ```swift
/// let policy = EndpointPolicy(trustedHosts: ["fcm.googleapis.com", "push.services.mozilla.com"])
/// policy.refusal(of: subscription)   // "subscription.endpoint: push.evil.example is not among …", or nil
/// ```
public struct EndpointPolicy: Sendable {
    public var addresses: AddressPolicy
    /// Host suffixes, lowercase: when set, an endpoint's host must be one of them or end with `.` and one of them.
    public var trustedHosts: [String]?

    /// The default: public hosts on port 443, any of them.
    public init(allowsPrivate: Bool = false, trustedHosts: [String]? = nil) {
        addresses = AddressPolicy(allowsPrivate: allowsPrivate)
        self.trustedHosts = trustedHosts
    }

    /// Why `subscription`'s endpoint may not be sent to, naming the field, or nil.
    func refusal(of subscription: WebPushSubscription) -> String? {
        let (host, port) = subscription.authority
        if let reason = addresses.refusal(host: host, port: port) {
            return "subscription.endpoint is refused: \(reason); push services are public hosts on port "
                + "\(AddressPolicy.port) (an app with \"allow_private_endpoints\" may send elsewhere)"
        }
        if let trustedHosts, !trustedHosts.contains(where: { host == $0 || host.hasSuffix("." + $0) }) {
            return "subscription.endpoint is refused: \(host) is not among the app's trusted_push_hosts ("
                + trustedHosts.joined(separator: ", ") + ")"
        }
        return nil
    }
}
