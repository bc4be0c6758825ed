import APNsSimulator
import FCMSimulator
import HTTP
import OAuth
import Testing

/// The simulator's APNs side, called as the server calls it.
@Suite struct APNsSimulatorTests {
    let simulator = FCMSimulator.everySide(apns: APNsSimulator(account: .init(
        publicKeyPEM: TLSSimulatorTests.key.publicKey.pem(), keyID: TLSSimulatorTests.keyID,
        teamID: TLSSimulatorTests.teamID)))

    func send(_ jwt: String, to device: String = "ipad-1") throws -> HTTPResponse {
        try simulator.call(
            "POST", "/3/device/\(device)",
            headers: [("authorization", "bearer " + jwt), ("apns-topic", "com.example.app")],
            body: #"{"aps":{"alert":"hi"}}"#)
    }

    /// Checked once and remembered: the second answer must not differ from the first, for a good token or a bad one.
    @Test func aProviderTokenIsJudgedTheSameEveryTimeItComes() throws {
        let good = try TLSSimulatorTests.providerToken()
        let forged = try TLSSimulatorTests.providerToken(key: try P256PrivateKey.generate())
        let wrongKeyID = try TLSSimulatorTests.providerToken(keyID: "OTHERKEY01")
        for _ in 0..<3 {
            #expect(try send(good).status == 200)
            #expect(try send(forged).status == 403)
            #expect(try send(wrongKeyID).status == 403)
            #expect(try send(good + "x").status == 403, "a changed signature")
        }
        #expect(try send(good, to: "notreg-1").status == 410)
    }
}
