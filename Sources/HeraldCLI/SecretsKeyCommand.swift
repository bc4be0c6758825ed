import OAuth
import Support

/// `herald secrets-key --out FILE`: a new key for the secrets Herald stores encrypted (SPEC §22).
enum SecretsKeyCommand {
    static let help = """
        Usage: herald secrets-key --out FILE [--json]

        Makes a new 256-bit key for the secrets Herald stores in its database (service-account keys, .p8 and VAPID
        keys, HMS client secrets, APNs certificates), which are kept encrypted with AES-256-GCM under it. FILE is
        created with mode 0600 and never overwritten; it holds a comment line naming the key's id, then the key in
        base64url. The id (a fingerprint of the key, not the key) is printed; `herald status` and the log show it.

        Start every `herald serve` that shares the database with the same file: --secrets-key-file FILE (or
        HERALD_SECRETS_KEY_FILE, or "secrets_key_file" in the --config file). Back the file up apart from the
        database: without it the stored secrets cannot be read, and a lost key means adding them again.

        Options:
          --out FILE   where to write the key (required)
          --json       {"key_id", "file"}

        Example:
          herald secrets-key --out /etc/herald/secrets.key
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        guard let parsed = try Arguments.keyMaking(arguments, help: help) else { return 0 }
        guard let path = parsed.value("out"), !path.isEmpty else {
            throw Arguments.UsageError(description: "give --out FILE: the key is written to a file, never printed")
        }
        let key = try SecretsKey.generate()
        try NewKeyFile.write(key.fileText, to: path, keepsExisting: "secrets-key never overwrites a file (the "
            + "secrets stored under the key in it could no longer be read)")
        if parsed.flag("json") {
            Output.json(["key_id": .string(key.id), "file": .string(path)])
        } else {
            print("wrote a new secrets key to \(path) (mode 0600), key id \(key.id)")
            print("Start serve with --secrets-key-file \(path), and back the file up apart from the database: "
                + "secrets stored under it cannot be read without it.")
        }
        return 0
    }
}
