import Foundation
import Testing

@Suite struct MetricsIntegrationTests {
    /// `name{labels} value` lines, checked against the exposition format; comments must be HELP or TYPE.
    static func parse(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#") {
                #expect(line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE "), "bad comment: \(line)")
                continue
            }
            let parts = line.split(separator: " ")
            #expect(parts.count == 2, "bad sample line: \(line)")
            let series = String(parts[0])
            #expect(series.range(of: #"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})?$"#,
                                 options: .regularExpression) != nil, "bad series: \(series)")
            samples[series] = try #require(Double(parts[1]), "bad value: \(line)")
        }
        return samples
    }

    @Test func countersMoveAfterADelivery() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox", "--api-token", "metrics-token"])
        let auth = ["Authorization": "Bearer metrics-token"]
        #expect(try await herald.request("GET", "/metrics").status == 401)
        let before = try Self.parse(try await herald.request("GET", "/metrics", headers: auth).text)
        #expect(before[#"herald_ingested_messages_total{app="default"}"#] == nil)

        let reply = try await herald.request("POST", "/v1/messages", body: #"{"registration_ids": ["a", "notreg-b"]}"#,
                                             headers: auth)
        _ = try await herald.waitUntilSettled(try #require(reply.json["id"] as? String), headers: auth)
        let metrics = try await herald.request("GET", "/metrics", headers: auth)
        #expect(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let after = try Self.parse(metrics.text)
        #expect(after[#"herald_ingested_messages_total{app="default"}"#] == 1)
        // The sandbox's app is FCM v1: one request per token, `notreg-b` answered 404 UNREGISTERED.
        #expect(after[#"herald_fcm_requests_total{app="default",code="200"}"#] == 1)
        #expect(after[#"herald_fcm_requests_total{app="default",code="404"}"#] == 1)
        #expect(after[#"herald_deliveries_total{app="default",outcome="delivered"}"#] == 1)
        #expect(after[#"herald_deliveries_total{app="default",outcome="dropped"}"#] == 1)
        #expect(after[#"herald_tokens_deleted_total{app="default"}"#] == 1)
        #expect(after["herald_fcm_request_seconds_count"] == 2)
    }
}
