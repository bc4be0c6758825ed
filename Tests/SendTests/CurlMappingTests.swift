import CCurl
@testable import Send
import Testing

@Suite struct CurlMappingTests {
    @Test(arguments: [
        (CURLE_OPERATION_TIMEDOUT, TransportFailure.timeout),
        (CURLE_COULDNT_CONNECT, .connect),
        (CURLE_RECV_ERROR, .reset),
        (CURLE_SEND_ERROR, .reset),
        (CURLE_GOT_NOTHING, .reset),
        (CURLE_PARTIAL_FILE, .reset),
        (CURLE_COULDNT_RESOLVE_HOST, .other(String(cString: curl_easy_strerror(CURLE_COULDNT_RESOLVE_HOST)))),
        (CURLE_SSL_CONNECT_ERROR, .other(String(cString: curl_easy_strerror(CURLE_SSL_CONNECT_ERROR)))),
    ])
    func curlErrorsMapToStableReasons(code: CURLcode, failure: TransportFailure) {
        #expect(Curl.failure(code) == failure)
    }

    /// A stranger's server (SPEC §19): how its TLS handshake failed is not told; the other failures read the same.
    @Test func genericFailuresHideHowTheHandshakeFailed() {
        #expect(Curl.failure(CURLE_SSL_CONNECT_ERROR, generic: true) == .tlsHandshakeFailed)
        #expect(Curl.failure(CURLE_PEER_FAILED_VERIFICATION, generic: true) == .tlsHandshakeFailed)
        #expect(Curl.failure(CURLE_COULDNT_CONNECT, generic: true) == .connect)
    }

    @Test(arguments: [
        (Int(CURL_HTTP_VERSION_1_0), "1.0"),
        (Int(CURL_HTTP_VERSION_1_1), "1.1"),
        (Int(CURL_HTTP_VERSION_2_0), "2"),
        (Int(CURL_HTTP_VERSION_3), "3"),
        (0, "unknown"),
    ])
    func httpVersionsReadAsTheirNumbers(value: Int, version: String) {
        #expect(Curl.httpVersion(value) == version)
    }
}
