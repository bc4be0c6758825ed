import Foundation
import Ingest
import Queue
import Storage
import Support

/// `herald send MESSAGE|- [--idempotency-key KEY] [--db PATH|URL] [--json]`
enum SendCommand {
    static let help = """
        Usage: herald send MESSAGE|- [--idempotency-key KEY] [--db PATH|URL] [--json]

        Queues one message, given as a JSON argument or, with -, read from standard input. It is checked exactly as
        POST /v1/messages checks it (an FCM legacy message plus "app" and "users"; see the README) and stored in one
        transaction. Prints the message id and how many deliveries were created. A running `herald serve` picks it
        up within a second.

        An invalid message prints its error code (InvalidTtl, InvalidDataKey, MissingRegistration, ...) and message,
        stores nothing, and exits 1. So does a message for an app that no `herald serve` delivers for (one that has
        not registered it in the database by starting with it configured): InvalidParameters, as the API answers.

        Options:
          --idempotency-key KEY   as the Idempotency-Key header: a repeat within 24 h returns the first message
          --db PATH|URL           SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
          --json                  {"id", "deliveries", "repeat"};
                                  an invalid message prints {"error": {"code", "message"}}

        Examples:
          herald send '{"to": "token-a", "data": {"score": "4x8"}}'
          echo '{"registration_ids": ["a", "b"], "app": "second"}' | herald send -
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + [.value("idempotency-key")])
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(1, "the message as a JSON argument, or - to read it from standard input")
        let key = parsed.value("idempotency-key")
        if let key, key.isEmpty || key.utf8.count > 255 {
            throw Arguments.UsageError(description: "--idempotency-key must be 1 to 255 bytes")
        }
        let body = parsed.positional[0] == "-" ? try readStandardInput() : Array(parsed.positional[0].utf8)
        guard body.count <= IngestAPI.bodyLimit else {
            return reject(APIError.payloadTooLarge("the message is over \(IngestAPI.bodyLimit) bytes"), parsed)
        }
        let message: IncomingMessage
        switch MessageValidator.validate(body: body) {
        case .failure(let failure): return reject(failure, parsed)
        case .success(let valid): message = valid
        }
        let connection = try openExistingDatabase(parsed)
        let stored = message.stored(idempotencyKey: key)
        let accepted: AcceptedMessage
        do {
            // As ingest refuses an app `serve` does not deliver for: here the apps are those a `serve` registered.
            let inserted = try connection.transaction { () throws -> AcceptedMessage? in
                // A message to users in every app (no app named) goes to the apps there are.
                let known = try stored.app == NewMessage.everyApp || connection.appState(stored.app) != nil
                guard known else { return nil }
                return try connection.insertMessage(stored, now: Clock.nowMillis())
            }
            guard let inserted else {
                return reject(.unknownApp(stored.app, known: try connection.apps().map(\.name)), parsed)
            }
            accepted = inserted
        } catch let conflict as IdempotencyConflict {
            return reject(.idempotencyConflict(conflict), parsed)
        }
        let deliveries = Output.count(accepted.deliveries, "delivery", "deliveries")
        if parsed.flag("json") {
            Output.json([
                "id": .string(accepted.id), "deliveries": .int(accepted.deliveries), "repeat": .bool(accepted.isRepeat),
            ])
        } else if accepted.isRepeat {
            print("\(accepted.id)  \(deliveries) (already queued with this idempotency key; nothing new stored)")
        } else {
            print("\(accepted.id)  \(deliveries)")
        }
        return 0
    }

    /// An invalid message: the same code and message the API would answer, exit 1.
    private static func reject(_ failure: APIError, _ parsed: Arguments) -> Int32 {
        if parsed.flag("json") {
            Output.json(failure.json)
        } else {
            HeraldCLI.printError("herald send: \(failure.code): \(failure.message)")
        }
        return 1
    }

    /// Standard input, up to one byte past the API's body limit (enough to know it is too big).
    private static func readStandardInput() throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= IngestAPI.bodyLimit {
            let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw CommandError(description: "cannot read standard input: \(String(cString: strerror(errno)))")
            }
            bytes += chunk[..<count]
        }
        return bytes
    }
}
