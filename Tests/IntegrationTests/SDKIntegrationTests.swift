import Foundation
import OAuth
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The real FCM SDKs — firebase-admin 7.7.0 and pyfcm 2.1.1 from PyPI, in a throw-away venv made by
/// `scripts/python-sdks` — pointed at the real `herald serve` as the README says, which delivers over FCM HTTP v1
/// to a real `herald fcm-sim`. `scripts/fcm_sdk_driver.py` checks what the SDKs get back (names, typed errors);
/// this test then follows every accepted message to the simulator.
///
/// The venv needs PyPI the first time. Without it this test fails rather than skips (see `PythonSDKs`).
@Suite struct SDKIntegrationTests {
    static let root = PythonSDKs.root
    static let apiToken = "sdk-test-api-token"

    @Test func firebaseAdminAndPyfcmSendThroughTheDropInEndpoint() async throws {
        let python = try PythonSDKs.python()

        let directory = HeraldProcess.makeDirectory()
        let simulatorFile = try V1IntegrationTests.writeServiceAccount(
            key: V1IntegrationTests.key, tokenURI: nil, in: directory, name: "sim.json")
        let simulator = try SimulatorProcess(["--service-account", simulatorFile])
        let base = String(simulator.endpoint.dropLast("/fcm/send".count))
        let keyFile = try V1IntegrationTests.writeServiceAccount(
            key: V1IntegrationTests.key, tokenURI: base + "/token", in: directory, name: "service-account.json")
        let herald = try HeraldProcess(directory: directory, arguments: [
            "--fcm-service-account", keyFile, "--fcm-endpoint", base, "--api-token", Self.apiToken,
        ])
        defer { herald.stop() }

        let driver = try PythonSDKs.run(python, [
            Self.root.appendingPathComponent("scripts/fcm_sdk_driver.py").path,
            herald.baseURL.absoluteString, Self.apiToken, "test-project",
        ])
        try #require(driver.status == 0, "the SDK driver failed:\n\(driver.stderr)" as Comment)
        let parsed = try JSONSerialization.jsonObject(with: Data(driver.stdout.utf8))
        let names = try #require(parsed as? [String: Any], "\(driver.stdout)")
        let batch = try #require(names["batch"] as? [String])
        #expect(batch.count == 100)
        let all = ["full", "fid", "dry_run", "pyfcm"].compactMap { names[$0] as? String } + batch
        #expect(all.count == 104)

        // Every accepted message is delivered; the name Herald answered is `projects/{p}/messages/{message id}`.
        let auth = ["Authorization": "Bearer \(Self.apiToken)"]
        for name in all {
            #expect(name.hasPrefix("projects/test-project/messages/"), "\(name)")
            let id = String(name.dropFirst("projects/test-project/messages/".count))
            let settled = HeraldProcess.summary(try await herald.waitUntilSettled(id, headers: auth))
            #expect(settled.count == 1 && settled.values.allSatisfy { $0 == "delivered - 1 -" }, "\(name): \(settled)")
        }

        let requests = try await simulator.requests()
        #expect(requests.allSatisfy { $0["format"] as? String == "v1" && $0["status"] as? Int == 200 })
        // Refused at Herald's door: nothing of them reached FCM.
        let targets = requests.map { ($0["to"] ?? $0["fid"] ?? $0["topic"] ?? "") as? String ?? "" }
        for refused in ["sdk-invalid", "sdk-unauth", "sdk-nowhere", "pyfcm-invalid"] {
            #expect(!targets.contains(refused), "\(refused) reached FCM")
        }
        #expect(Set(targets).isSuperset(of: (0..<100).map { "sdk-batch-\($0)" }), "every fid of send_each_async")
        let fid = try #require(requests.first { $0["fid"] as? String == "sdk-fid-1" }, "the fid message went as fid")
        #expect((fid["message"] as? [String: Any])?["data"] as? [String: String] == ["kind": "fid"])
        let topic = try #require(requests.first { $0["topic"] as? String == "news" })
        #expect(topic["dry_run"] as? Bool == true, "dry_run=True goes out as validate_only")
        let pyfcm = try #require(requests.first { $0["to"] as? String == "pyfcm-token-1" })
        #expect((pyfcm["message"] as? [String: Any])?["data"] as? [String: String] == ["via": "pyfcm"])

        // The platform blocks arrive as the SDK built them; only the TTLs count down.
        let full = try #require(requests.first { $0["to"] as? String == "sdk-token-1" })
        let message = try #require(full["message"] as? [String: Any])
        #expect(message["data"] as? [String: String] == ["score": "4x8", "time": "15:10"])
        #expect(message["notification"] as? [String: String] == ["title": "Portugal vs. Denmark",
                                                                   "body": "great match!"])
        #expect(message["fcm_options"] as? [String: String] == ["analytics_label": "sdk-test"])
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["priority"] as? String == "high")
        #expect(android["collapse_key"] as? String == "score")
        #expect(android["notification"] as? [String: String] == ["icon": "ic_ball", "color": "#00ff00",
                                                                  "channel_id": "scores"])
        let ttl = try #require(android["ttl"] as? String)
        #expect(["3600s", "3599s", "3598s"].contains(ttl), "android.ttl is what remains: \(ttl)")
        let apns = try #require(message["apns"] as? [String: Any])
        #expect(apns["headers"] as? [String: String] == ["apns-priority": "10"])
        let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
        #expect(aps?["badge"] as? Int == 3 && aps?["sound"] as? String == "default"
            && aps?["category"] as? String == "MATCH")
        let webpush = try #require(message["webpush"] as? [String: Any])
        let webHeaders = try #require(webpush["headers"] as? [String: String])
        #expect(webHeaders["Urgency"] == "high")
        #expect(["300", "299", "298"].contains(webHeaders["TTL"] ?? ""), "webpush TTL is what remains")
        #expect(webpush["data"] as? [String: String] == ["web": "1"])
        #expect(webpush["notification"] as? [String: String] == ["title": "Web title", "body": "web body"])
    }
}
