import Foundation
import NetworkTestSupport
import Testing

@testable import Send

/// A client certificate from PKCS#12 or PEM (made by the `openssl` command for the run): what it says of itself,
/// and refusals that say what is wrong without the password.
@Suite struct TLSClientIdentityTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-identity-\(UUID())")
    let password = "hunter2 but longer"

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + ec + ["-keyout", "a.key", "-out", "a.pem", "-days", "10",
                                              "-subj", "/UID=com.example.app/CN=Apple Push Services: com.example.app"])
        try openssl(["req", "-x509"] + ec + ["-keyout", "b.key", "-out", "b.pem", "-days", "10", "-subj", "/CN=b"])
        try openssl(["pkcs12", "-export", "-inkey", "a.key", "-in", "a.pem", "-out", "a.p12",
                     "-passout", "pass:\(password)"])
        // As older Keychain Access exports are: certificates under 40-bit RC2, which OpenSSL 3 keeps in its legacy
        // provider.
        try openssl(["pkcs12", "-export", "-legacy", "-inkey", "a.key", "-in", "a.pem", "-out", "legacy.p12",
                     "-passout", "pass:\(password)"])
    }

    func openssl(_ arguments: [String]) throws {
        try OpenSSLCommand.run(arguments, in: directory)
    }

    func text(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    @Test func aPKCS12AndItsPEMGiveTheSameCertificate() throws {
        let fromP12 = try TLSClientIdentity(pkcs12: bytes("a.p12"), password: password)
        let fromPEM = try TLSClientIdentity(certificatePEM: text("a.pem"), keyPEM: text("a.key"))
        #expect(fromP12.sha256Fingerprint == fromPEM.sha256Fingerprint)
        #expect(fromP12.sha256Fingerprint.count == 64)
        #expect(fromP12.subjectUserID == "com.example.app")
        #expect(fromP12.subjectCommonName == "Apple Push Services: com.example.app")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(fromP12.notAfterMillis > now + 9 * 86_400_000 && fromP12.notAfterMillis < now + 11 * 86_400_000)
        #expect(!fromP12.description.contains("PRIVATE"))
        // The certificate and key in one PEM text, as Sygnal's `certfile` holds them.
        let combined = try text("a.pem") + text("a.key")
        #expect(try TLSClientIdentity(certificatePEM: combined, keyPEM: combined).sha256Fingerprint
            == fromP12.sha256Fingerprint)
    }

    @Test func aPKCS12UnderLegacyCiphersLoads() throws {
        let legacy = try TLSClientIdentity(pkcs12: bytes("legacy.p12"), password: password)
        #expect(legacy.subjectUserID == "com.example.app")
    }

    @Test func aWrongPasswordIsSaidWithoutThePassword() throws {
        for given in ["wrong horse battery", nil] as [String?] {
            do {
                _ = try TLSClientIdentity(pkcs12: bytes("a.p12"), password: given)
                Issue.record("opened with \(String(describing: given))")
            } catch {
                #expect("\(error)".contains("the password is wrong"), "\(error)")
                #expect(!"\(error)".contains("horse"))
            }
        }
    }

    @Test func aKeyOfAnotherCertificateIsRefused() throws {
        #expect(throws: TLSClientIdentity.Invalid.self) {
            try TLSClientIdentity(certificatePEM: text("a.pem"), keyPEM: text("b.key"))
        }
        do {
            _ = try TLSClientIdentity(certificatePEM: text("a.pem"), keyPEM: text("b.key"))
        } catch {
            #expect("\(error)" == "the private key does not belong to the certificate")
        }
    }

    @Test func whatIsNotACertificateIsRefused() throws {
        #expect(throws: TLSClientIdentity.Invalid.self) {
            try TLSClientIdentity(pkcs12: Array("not a p12".utf8), password: nil)
        }
        #expect(throws: TLSClientIdentity.Invalid.self) {
            try TLSClientIdentity(certificatePEM: "hello", keyPEM: text("a.key"))
        }
        #expect(throws: TLSClientIdentity.Invalid.self) {
            try TLSClientIdentity(certificatePEM: text("a.pem"), keyPEM: "hello")
        }
    }
}
