import CCurl
import Testing

/// The libcurl module links and its typed setopt wrappers reach the library.
@Suite struct CurlSmokeTests {
    @Test func versionReportsLibcurl() {
        let version = String(cString: curl_version())
        #expect(version.hasPrefix("libcurl/"))
    }

    @Test func typedSetoptAcceptsOptionsAndRejectsUnknownOnes() {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        let handle = curl_easy_init()
        defer { curl_easy_cleanup(handle) }
        #expect(herald_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1) == CURLE_OK)
        #expect(herald_curl_easy_setopt_string(handle, CURLOPT_URL, "http://127.0.0.1:1/") == CURLE_OK)
        #expect(herald_curl_easy_setopt_long(handle, CURLoption(rawValue: 99_999), 1) != CURLE_OK)
    }
}
