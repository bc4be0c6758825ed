import OAuth
import Support

/// `herald webhook-secret [--out FILE]`: a new Standard Webhooks secret for an outcome webhook (SPEC §23).
enum WebhookSecretCommand {
    static let help = """
        Usage: herald webhook-secret [--out FILE] [--json]

        Makes a new outcome-webhook secret: whsec_ followed by the base64 of 32 random bytes, as the Standard
        Webhooks spec says. Herald signs every webhook request with it (webhook-signature), and the receiver checks
        the signature with the same secret (README: "Receiving outcomes").

        With --out, the secret is written to FILE (mode 0600; an existing file is never overwritten): name it as
        "secret_file" of an "outcome_webhook" in the --config file. Without it, the secret is printed.

        Options:
          --out FILE   write the secret to FILE instead of standard output
          --json       {"secret"} or, with --out, {"secret_file"}

        Example:
          herald webhook-secret --out /etc/herald/outcomes.whsec
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        guard let parsed = try Arguments.keyMaking(arguments, help: help) else { return 0 }
        let secret = try WebhookSecret.generate()
        guard let path = parsed.value("out") else {
            if parsed.flag("json") { Output.json(["secret": .string(secret)]) } else { print(secret) }
            return 0
        }
        try NewKeyFile.write(
            secret + "\n", to: path,
            keepsExisting: "webhook-secret never overwrites a file (receivers still check signatures with the old secret)")
        if parsed.flag("json") {
            Output.json(["secret_file": .string(path)])
        } else {
            print("wrote a new webhook secret to \(path) (mode 0600)")
            print(#"Name it in the --config file: "outcome_webhook": {"url": "https://…", "secret_file": "\#(path)"}"#)
        }
        return 0
    }
}
