/// How one request ended, as far as the transport can tell.
public enum TransportResult: Sendable {
    /// A complete response of any status. Header names are lowercased (HTTP/2 sends them so; HTTP/1.1 is
    /// made to match) and come from the final response only, never from a `100 Continue` before it.
    /// `httpVersion` is the version actually used: `"1.0"`, `"1.1"`, `"2"` or `"3"`.
    case response(status: Int, headers: [(name: String, value: String)], body: [UInt8], httpVersion: String)
    /// No complete response, and why.
    case failure(TransportFailure)
}

extension TransportResult {
    /// The first value of a response header; `name` must be lowercase. `nil` for a failure.
    public func header(_ name: String) -> String? {
        guard case .response(_, let headers, _, _) = self else { return nil }
        return headers.first(where: { $0.name == name })?.value
    }
}
