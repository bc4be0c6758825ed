import CCrypto

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
        var details: [String] = []
        while true {
            let code = ERR_get_error()
            guard code != 0 else { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
            details.append(String(decoding: text, as: UTF8.self))
        }
        return CryptoError(operation, detail: details.last ?? "")
    }
}
