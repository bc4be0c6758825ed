import TLS

/// A libcrypto failure: what Herald was doing, and OpenSSL's own text for the error it queued.
///
/// The text comes from `ERR_error_string_n`, which names the library, function and reason, never the key material.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var detail: String

    public init(_ operation: String, detail: String) {
        self.operation = operation
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? operation : "\(operation) (\(detail))" }

    /// Takes every error libcrypto queued on this thread, so a later failure does not report an earlier one's cause.
    static func drain(_ operation: String) -> CryptoError {
        CryptoError(operation, detail: OpenSSLError.drain().last ?? "")
    }
}
