import Foundation
import Support
import Testing
import TestSupport

@testable import OAuth

/// ES256 as APNs and Web Push's VAPID take it: a P-256 key, signatures as r ‖ s, checked here and by an
/// independent verifier (node's `crypto`, with `dsaEncoding: 'ieee-p1363'`, JWS' encoding).
@Suite struct ES256Tests {
    let key = try! P256PrivateKey.generate()

    @Test func aTokenVerifiesWithThePublicKeyAndNotWithAnother() throws {
        let token = try JWT.signES256(
            header: [("kid", .string("ABC123DEFG"))], claims: .object([("iss", "TEAM123456"), ("iat", .int(1))]),
            with: key)
        let decoded = try JWT.verifyES256(token, with: key.publicKey)
        #expect(decoded.header == JSON.object([("alg", "ES256"), ("kid", "ABC123DEFG")]))
        #expect(decoded.claims["iss"]?.stringValue == "TEAM123456")
        #expect(decoded.signature.count == 64)
        let other = try P256PrivateKey.generate()
        #expect(throws: JWT.Invalid("Invalid JWT Signature.")) { try JWT.verifyES256(token, with: other.publicKey) }
    }

    @Test func aKeyReadBackFromItsPEMSignsAlike() throws {
        let again = try P256PrivateKey(pem: key.pkcs8PEM())
        let message = Array("header.claims".utf8)
        #expect(key.publicKey.verifyES256(try again.signES256(message), of: message))
        #expect(try P256PublicKey(pem: key.publicKey.pem()).uncompressedPoint == key.publicKey.uncompressedPoint)
        #expect(key.publicKey.uncompressedPoint.first == 0x04)
    }

    @Test func anRSAKeyIsNotAP256Key() throws {
        let rsa = try RSAPrivateKey.generate(bits: 1024)
        #expect(throws: CryptoError("not a P-256 key: ES256 needs one", detail: "")) {
            try P256PrivateKey(pem: rsa.pkcs8PEM())
        }
    }

    @Test func nodesCryptoVerifiesTheSignatures() throws {
        let directory = TemporaryDirectory(prefix: "es256")
        var lines: [String] = []
        for index in 0..<20 {
            let token = try JWT.signES256(
                header: [("kid", "K")], claims: .object([("iat", .int(Int64(index)))]), with: key)
            lines.append(token)
        }
        let tokens = directory.url.appendingPathComponent("tokens")
        try lines.joined(separator: "\n").write(to: tokens, atomically: true, encoding: .utf8)
        let publicKey = directory.url.appendingPathComponent("key.pem")
        try key.publicKey.pem().write(to: publicKey, atomically: true, encoding: .utf8)
        let script = """
            const crypto = require('crypto'); const fs = require('fs');
            const key = crypto.createPublicKey(fs.readFileSync(process.argv[1]));
            let good = 0;
            for (const token of fs.readFileSync(process.argv[2], 'utf8').split('\\n')) {
                const [h, c, s] = token.split('.');
                if (crypto.verify('sha256', Buffer.from(h + '.' + c), { key, dsaEncoding: 'ieee-p1363' },
                                  Buffer.from(s, 'base64url'))) good++;
            }
            console.log(good);
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["node", "-e", script, publicKey.path, tokens.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0)
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "20")
    }
}
