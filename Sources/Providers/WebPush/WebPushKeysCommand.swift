import Foundation
import OAuth
import ProviderKit
import Support

/// `herald webpush-keys [--out FILE]`: a new VAPID key pair (RFC 8292) for a Web Push app.
enum WebPushKeysCommand {
    static let command = HeraldCommand(
        name: "webpush-keys", summary: "make a VAPID key pair for a Web Push app (its applicationServerKey)",
        run: run)

    static let help = """
        Usage: herald webpush-keys [--out FILE] [--json]

        Makes a new P-256 key pair for Web Push's VAPID (RFC 8292): the private key signs every request Herald
        sends to a push service; its public key is the applicationServerKey that your pages pass to
        pushManager.subscribe, which ties each browser subscription to this key.

        With --out, the private key is written to FILE (PKCS#8 PEM, mode 0600; an existing file is never
        overwritten) and the public key is printed. Without it, the PEM is printed on standard output, followed by
        the public key. Either way, name the file in the app's entry of the --config file:

          {"name": "web", "provider": "webpush", "vapid_private_key_file": "FILE",
           "vapid_subject": "mailto:you@example.com"}

        Keep the key: subscriptions made with one applicationServerKey only accept messages signed by its private
        key, so a new key means every browser must subscribe again.

        Options:
          --out FILE   write the private key to FILE instead of standard output
          --json       {"application_server_key", "private_key_file"} (with --out) or {"application_server_key",
                       "private_key_pem"}

        Examples:
          herald webpush-keys --out /etc/herald/vapid.pem
          herald webpush-keys            # the PEM and the applicationServerKey on standard output
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        guard let parsed = try Arguments.keyMaking(arguments, help: help) else { return 0 }
        let key = try P256PrivateKey.generate()
        let applicationServerKey = Base64URL.encode(key.publicKey.uncompressedPoint)
        let pem = key.pkcs8PEM()
        guard let path = parsed.value("out") else {
            if parsed.flag("json") {
                let json: JSON = [
                    "application_server_key": .string(applicationServerKey), "private_key_pem": .string(pem),
                ]
                print(json.serialized())
            } else {
                print(pem, terminator: pem.hasSuffix("\n") ? "" : "\n")
                print("applicationServerKey: \(applicationServerKey)")
                print(#"Save the PEM block above in a file only herald can read and name it as the app's "#
                    + #""vapid_private_key_file" in the --config file; pages pass the applicationServerKey to "#
                    + "pushManager.subscribe.")
            }
            return 0
        }
        try NewKeyFile.write(pem, to: path, keepsExisting: "webpush-keys never overwrites a file (a new key "
            + "would leave every subscription made with the old one unable to receive)")
        if parsed.flag("json") {
            let json: JSON = [
                "application_server_key": .string(applicationServerKey), "private_key_file": .string(path),
            ]
            print(json.serialized())
        } else {
            print("wrote a new VAPID private key to \(path) (PKCS#8 PEM, mode 0600)")
            print("applicationServerKey: \(applicationServerKey)")
            print(#"Name the file as the app's "vapid_private_key_file" in the --config file ({"name": "web", "#
                + #""provider": "webpush", "vapid_private_key_file": "\#(path)", "vapid_subject": "#
                + #""mailto:you@example.com"}); pages pass the applicationServerKey to pushManager.subscribe."#)
        }
        return 0
    }
}
