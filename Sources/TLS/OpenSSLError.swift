import CSSL

/// OpenSSL's own texts for what failed on this thread (its error queue): library, function and reason, never key
/// material. Each read empties the queue, so a later failure never reports an earlier one's cause.
public enum OpenSSLError {
    /// Every error queued on this thread, oldest first; the queue is empty afterwards.
    public static func drain() -> [String] {
        var texts: [String] = []
        while true {
            let code = ERR_get_error()
            guard code != 0 else { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            texts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return texts
    }

    /// `step` and the oldest error queued (the cause; later ones report its consequences): "TLS: SSL_new: …".
    public static func reason(_ step: String) -> String {
        guard let first = drain().first else { return step }
        return step + ": " + first
    }

    /// Forgets what is queued (a failure whose text is not wanted: the peer went away).
    public static func clear() {
        ERR_clear_error()
    }
}
