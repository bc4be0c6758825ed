import CCurl

/// Process-wide libcurl facts: the one `curl_global_init`, and how curl's codes read in Herald's terms.
enum Curl {
    /// `curl_global_init` is not thread-safe and must run before any thread uses curl; a `static let`
    /// initializer runs exactly once, and every pool touches it before it makes a handle.
    private static let initialized: Void = {
        let code = curl_global_init(Int(CURL_GLOBAL_ALL))
        precondition(code == CURLE_OK, "curl_global_init failed: \(String(cString: curl_easy_strerror(code)))")
    }()

    static func initializeOnce() { _ = initialized }

    /// What a failed transfer reports. Only the codes the classifier cares about are named; the rest keep curl's
    /// own text so an operator can still tell them apart. `generic`: the host is a stranger's (SPEC §19), and how its
    /// TLS handshake failed is not told.
    static func failure(_ code: CURLcode, generic: Bool = false) -> TransportFailure {
        switch code {
        case CURLE_SSL_CONNECT_ERROR where generic, CURLE_PEER_FAILED_VERIFICATION where generic: .tlsHandshakeFailed
        case CURLE_OPERATION_TIMEDOUT: .timeout
        case CURLE_COULDNT_CONNECT: .connect
        // The connection ended before a complete answer (closed or reset by the peer).
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE: .reset
        default: .other(String(cString: curl_easy_strerror(code)))
        }
    }

    /// `CURLINFO_HTTP_VERSION` as the version string a response reports.
    static func httpVersion(_ value: Int) -> String {
        switch value {
        case Int(CURL_HTTP_VERSION_1_0): "1.0"
        case Int(CURL_HTTP_VERSION_1_1): "1.1"
        case Int(CURL_HTTP_VERSION_2_0): "2"
        case Int(CURL_HTTP_VERSION_3): "3"
        default: "unknown"
        }
    }
}
