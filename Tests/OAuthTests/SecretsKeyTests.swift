import Testing

@testable import OAuth

/// The secrets box (SPEC §22): AES-256-GCM under the `--secrets-key-file` key, one text line per secret, and errors
/// that name key ids, never a secret or a key.
@Suite struct SecretsKeyTests {
    let key = try! SecretsKey.generate()
    let secret = Array("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEG\n-----END PRIVATE KEY-----\n".utf8)

    @Test func aSealedSecretOpensUnderTheSameKeyAndContext() throws {
        let sealed = try key.seal(secret, context: "apps/ios/key")
        #expect(sealed.hasPrefix("hs1:\(key.id):"))
        #expect(try key.open(sealed, context: "apps/ios/key") == secret)
        #expect(try key.open(try key.seal([], context: "empty"), context: "empty") == [])
    }

    @Test func eachSealingHasItsOwnNonce() throws {
        #expect(try key.seal(secret, context: "c") != key.seal(secret, context: "c"))
    }

    @Test func anyByteChangedIsRefused() throws {
        let sealed = Array(try key.seal(secret, context: "apps/ios/key").utf8)
        for index in sealed.indices {
            var changed = sealed
            // Another character of the same alphabet, so each position's change is a real edit, not a parse error.
            changed[index] = sealed[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(throws: SecretsError.self, "byte \(index) changed") {
                try key.open(String(decoding: changed, as: UTF8.self), context: "apps/ios/key")
            }
        }
    }

    @Test func anotherContextIsRefused() throws {
        let sealed = try key.seal(secret, context: "apps/ios/key")
        #expect(throws: SecretsError.notAuthentic(keyID: key.id)) {
            try key.open(sealed, context: "apps/other/key")
        }
    }

    @Test func anotherKeyIsRefusedNamingBothKeyIDs() throws {
        let other = try SecretsKey.generate()
        let sealed = try key.seal(secret, context: "c")
        do {
            _ = try other.open(sealed, context: "c")
            Issue.record("opened under another key")
        } catch {
            #expect(error == .otherKey(sealedWith: key.id, given: other.id))
            #expect(error.description.contains(key.id) && error.description.contains(other.id))
        }
        #expect(try SecretsKey.keyID(of: sealed) == key.id)
    }

    @Test func errorsNeverHoldTheSecretOrTheKey() throws {
        let sealed = try key.seal(secret, context: "c")
        let keyText = key.fileText.split(separator: "\n")[1]
        let errors: [SecretsError] = [
            .noKey, .malformed, .notAuthentic(keyID: key.id), .otherKey(sealedWith: key.id, given: key.id),
        ]
        var texts = errors.map(\.description) + [key.description, String(describing: key)]
        do { _ = try key.open(sealed + "x", context: "c") } catch { texts.append(error.description) }
        for text in texts {
            #expect(!text.contains("BEGIN PRIVATE KEY") && !text.contains(keyText), "\(text)")
        }
        #expect(SecretsError.noKey.description.contains("herald secrets-key --out"))
    }

    @Test func theKeyFileRoundTripsAndNamesItsKey() throws {
        let text = key.fileText
        #expect(text.hasPrefix("# herald secrets key"))
        #expect(text.contains(key.id))
        let read = try SecretsKey(fileText: text)
        #expect(read.id == key.id)
        #expect(try read.open(key.seal(secret, context: "c"), context: "c") == secret)
    }

    @Test(arguments: ["", "# only a comment\n", "c2hvcnQ\n", "AAAA\nAAAA\n"])
    func aFileThatIsNotAKeyIsRefused(_ text: String) {
        #expect(throws: CryptoError.self) { try SecretsKey(fileText: text) }
    }

    @Test func keyIDsAreFingerprintsThatDifferPerKey() throws {
        #expect(key.id.count == 16)
        #expect(try SecretsKey(bytes: [UInt8](repeating: 7, count: 32)).id
            == SecretsKey(bytes: [UInt8](repeating: 7, count: 32)).id)
        #expect(try SecretsKey.generate().id != key.id)
    }
}
