import Foundation
import OAuth
import Queue
import Storage
import Support
import Testing
import WebPushCrypto

@testable import HeraldCLI

/// The admin commands, run as the real `herald` binary against prepared databases.
@Suite struct CLITests {
    let directory = HeraldProcess.makeDirectory()
    var db: String { directory.appendingPathComponent("herald.db").path }

    static let fcmKey = "AAAA-cli-test-SECRET-key-0123"

    // MARK: - Helpers

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
        }
    }

    /// Runs `herald arguments` to completion with `stdin` as its standard input. Output goes through files, so a long
    /// answer cannot fill a pipe and stall the process.
    @discardableResult
    func herald(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = HeraldProcess.executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        env.merge(environment) { $1 }
        process.environment = env
        let name = UUID().uuidString
        let outURL = directory.appendingPathComponent("\(name).out")
        let errURL = directory.appendingPathComponent("\(name).err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(Data(stdin.utf8))
            try input.fileHandleForWriting.close()
        }
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus,
            stdout: try String(contentsOf: outURL, encoding: .utf8),
            stderr: try String(contentsOf: errURL, encoding: .utf8))
    }

    /// `herald COMMAND ... --db <test db>`.
    @discardableResult
    func admin(_ arguments: [String], stdin: String? = nil) throws -> Run {
        try herald(arguments + ["--db", db], stdin: stdin)
    }

    /// `herald migrate`, then the `apps` rows that a `herald serve` delivering for apps default and second creates
    /// when it starts (`herald send` refuses any other app).
    func migrate() throws {
        let run = try herald(["migrate", "--db", db])
        #expect(run.status == 0, "\(run.stderr)")
        try connection().run("INSERT OR IGNORE INTO apps (name) VALUES ('default'), ('second')")
    }

    /// Queues a message with `herald send --json`; returns its id.
    func send(_ message: String) throws -> String {
        let run = try admin(["send", message, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(run.json["id"] as? String, "send printed \(run.stdout)")
    }

    func connection() throws -> Connection {
        try Connection(path: db)
    }

    func store() throws -> SQLiteQueueStore {
        SQLiteQueueStore(connection: try connection())
    }

    /// Moves the delivery to `token` into `state`, as reconciliation would have.
    func set(_ token: String, _ state: String, reason: String? = nil, ago: Int64 = 0, attempts: Int64 = 3) throws {
        let changed = try connection().run(
            """
            UPDATE deliveries SET state = ?, reason = ?, attempts = ?, updated_at = ?, last_status = 400
            WHERE token = ?
            """,
            .text(state), .optional(reason), .integer(attempts),
            .integer(Int64(Date().timeIntervalSince1970 * 1000) - ago), .text(token))
        #expect(changed == 1, "no delivery to \(token)")
    }

    func row(_ token: String) throws -> String? {
        try connection().queryOne(
            "SELECT state || ' ' || coalesce(reason, '-') || ' ' || attempts FROM deliveries WHERE token = ?",
            [.text(token)]) { $0.string(0) }
    }

    func deliveryID(_ token: String) throws -> Int64 {
        let id = try connection().queryOne("SELECT id FROM deliveries WHERE token = ?", [.text(token)]) { $0.int64(0) }
        return try #require(id, "no delivery to \(token)")
    }

    func count(_ sql: String) throws -> Int {
        try connection().queryOne(sql) { $0.int(0) } ?? -1
    }

    static let day: Int64 = 86_400_000

    // MARK: - Help and usage

    static let helpPages: [[String]] = [
        ["status"], ["send"], ["message"], ["dead"], ["dead", "list"], ["dead", "show"], ["dead", "requeue"],
        ["dead", "purge"], ["tokens"], ["tokens", "list"], ["tokens", "show"], ["tokens", "add"], ["tokens", "delete"],
        ["token-events"], ["prune"], ["backup"], ["webpush-keys"],
        ["secrets-key"],
    ]

    @Test(arguments: helpPages)
    func everyCommandExplainsItselfWithAnExample(_ command: [String]) throws {
        let run = try herald(command + ["--help"])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("Usage: herald \(command.joined(separator: " "))"), "\(run.stdout)")
        #expect(run.stdout.contains("Example"))
        #expect(run.stdout.split(separator: "\n").allSatisfy { $0.count <= 120 }, "help lines over 120 columns")
    }

    @Test func theGaugesWaitLongerWhenCountingTheBacklogTakesLong() {
        #expect(Service.gaugeRefreshDelay(took: 0.05) == Service.gaugeRefreshSeconds)
        #expect(Service.gaugeRefreshDelay(took: 0.5) == Service.gaugeRefreshSeconds)
        #expect(Service.gaugeRefreshDelay(took: 3) == 60)
    }

    @Test func theCommandListNamesEveryAdminCommand() throws {
        let run = try herald(["--help"])
        #expect(run.status == 0)
        for name in ["status", "send", "message", "dead", "tokens", "token-events", "prune", "backup", "pause",
                     "webpush-keys", "secrets-key"] {
            #expect(run.stdout.contains("\n  \(name) "), "herald --help lacks \(name)")
        }
        #expect(try herald(["help", "dead"]).stdout.hasPrefix("Usage: herald dead"))
    }

    static let usageMistakes: [[String]] = [
        ["status", "--frob"], ["send", "--app", "x", "{}"], ["dead", "list", "--yes"], ["dead", "frob"], ["dead"],
        ["tokens"], ["tokens", "add"], ["prune", "--older-than", "7x"], ["dead", "list", "--since", "15"],
        ["dead", "list", "--limit", "0"], ["token-events", "--after", "-1"], ["dead", "show", "abc"], ["backup"],
        ["message", "a", "b"],
    ]

    @Test(arguments: usageMistakes)
    func aUsageMistakeExitsTwoWithAOneLineHint(_ arguments: [String]) throws {
        try migrate()
        let run = try admin(arguments)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stdout.isEmpty)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("--help"), "\(run.stderr)")
    }

    @Test func anUnknownCommandExitsTwo() throws {
        let run = try herald(["frobnicate"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("herald --help"))
    }

    @Test func aMissingDatabaseIsAnErrorNotANewEmptyQueue() throws {
        let missing = directory.appendingPathComponent("typo.db").path
        let run = try herald(["status", "--db", missing])
        #expect(run.status == 1)
        #expect(run.stderr.contains("no database at \(missing)"))
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func durationsAreWholeNumbersWithAUnit() {
        #expect(DurationText.millis("90s") == 90_000)
        #expect(DurationText.millis("15m") == 900_000)
        #expect(DurationText.millis("12h") == 43_200_000)
        #expect(DurationText.millis("7d") == 604_800_000)
        for invalid in ["", "7", "d", "7x", "-1d", "1.5h", "7 d", "+7d", "99999999999d", "７d"] {
            #expect(DurationText.millis(invalid) == nil, "\(invalid) was accepted")
        }
        #expect(DurationText.format(192_000) == "3m12s")
        #expect(DurationText.format(7 * 86_400_000) == "7d")
        #expect(DurationText.format(500) == "0s")
    }

    @Test func tablesAlignColumns() {
        var table = TextTable(["APP", "QUEUED"], rightAligned: [1])
        table.append(["default", "12"])
        table.append(["b", "3456789"])
        #expect(table.render() == "APP       QUEUED\ndefault       12\nb        3456789")
    }

    // MARK: - send

    @Test func sendQueuesAMessageFromAnArgumentOrStandardInput() throws {
        try migrate()
        let fromArgument = try admin(["send", #"{"registration_ids": ["a", "b"], "data": {"k": "v"}}"#, "--json"])
        #expect(fromArgument.status == 0)
        #expect(fromArgument.json["deliveries"] as? Int == 2)
        let id = try #require(fromArgument.json["id"] as? String)

        let fromStdin = try admin(["send", "-"], stdin: #"{"to": "c", "app": "second", "priority": "high"}"#)
        #expect(fromStdin.status == 0)
        let secondID = try #require(fromStdin.stdout.split(separator: " ").first.map(String.init))
        #expect(fromStdin.stdout.contains("1 delivery"))

        let stored = try #require(try store().message(id: id))
        #expect(stored.payload == #"{"data":{"k":"v"}}"#)
        #expect(stored.deliveries.map(\.token) == ["a", "b"])
        #expect(stored.deliveries.allSatisfy { $0.state == .queued && $0.attempts == 0 })
        let second = try #require(try store().message(id: secondID))
        #expect(second.app == "second" && second.priority == .high)
    }

    @Test func sendWithAnIdempotencyKeyStoresOnce() throws {
        try migrate()
        let first = try admin(["send", #"{"to": "a"}"#, "--idempotency-key", "k1", "--json"])
        let again = try admin(["send", #"{"to": "a"}"#, "--idempotency-key", "k1", "--json"])
        #expect(again.json["id"] as? String == first.json["id"] as? String)
        #expect(again.json["repeat"] as? Bool == true)
        #expect(try count("SELECT count(*) FROM deliveries") == 1)
    }

    @Test(arguments: [
        (#"{"to": "a", "time_to_live": -1}"#, "InvalidTtl"),
        (#"{"to": "a", "data": {"from": "x"}}"#, "InvalidDataKey"),
        (#"{"data": {}}"#, "MissingRegistration"),
        (#"{"to": "a", "colour": "red"}"#, "InvalidParameters"),
        ("not json", "InvalidJson"),
    ])
    func sendRejectsWhatTheAPIRejectsWithTheSameCode(_ message: String, _ code: String) throws {
        try migrate()
        let run = try admin(["send", message])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("herald send: \(code): "), "\(run.stderr)")
        let json = try admin(["send", message, "--json"])
        #expect(json.status == 1)
        #expect((json.json["error"] as? [String: Any])?["code"] as? String == code)
        #expect(try count("SELECT count(*) FROM messages") == 0)
    }

    // MARK: - message and status

    @Test func messageShowsTheMessageAndEachDelivery() throws {
        try migrate()
        let id = try send(#"{"registration_ids": ["tok-a", "tok-b"], "collapse_key": "score"}"#)
        try set("tok-b", "delivered", attempts: 1)
        try connection().run(
            "UPDATE deliveries SET fcm_message_id = '0:42', canonical_token = 'tok-c' WHERE token = 'tok-b'")

        let json = try admin(["message", id, "--json"])
        #expect(json.status == 0)
        #expect(json.json["id"] as? String == id)
        #expect(json.json["collapse_key"] as? String == "score")
        let deliveries = try #require(json.json["deliveries"] as? [[String: Any]])
        #expect(deliveries.count == 2)
        #expect(Set(deliveries[0].keys) == [
            "token", "app", "state", "reason", "attempts", "next_attempt_at", "fcm_message_id", "canonical_token",
            "last_status",
        ])
        #expect(deliveries[1]["fcm_message_id"] as? String == "0:42")
        #expect(deliveries[1]["canonical_token"] as? String == "tok-c")

        let text = try admin(["message", id])
        #expect(text.status == 0)
        #expect(text.stdout.contains("TOKEN"))
        let line = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix("tok-b ") })
        #expect(line.contains("delivered") && line.contains("0:42") && line.contains("tok-c"))

        let missing = try admin(["message", "01NOSUCHMESSAGE0000000000"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no message 01NOSUCHMESSAGE0000000000"))
    }

    @Test func statusShowsBacklogPausedAppsDeadLettersAndTheLastMinute() throws {
        try migrate()
        _ = try send(#"{"registration_ids": ["q1", "q2", "ok", "gone", "dead"]}"#)
        _ = try send(#"{"to": "s1", "app": "second"}"#)
        try set("ok", "delivered")
        try set("gone", "dropped", reason: "NotRegistered")
        try set("dead", "dead", reason: "InvalidRegistration")
        #expect(try admin(["pause", "second", "--reason", "rotating the key"]).status == 0)

        let run = try admin(["status", "--json"])
        #expect(run.status == 0)
        let apps = try #require(run.json["apps"] as? [[String: Any]])
        #expect(apps.map { $0["app"] as? String } == ["default", "second"])
        let main = apps[0]
        #expect(main["queued"] as? Int == 2)
        #expect(main["ready"] as? Int == 2)
        #expect(main["inflight"] as? Int == 0)
        #expect(main["dead"] as? Int == 1)
        #expect(main["paused"] as? Bool == false)
        #expect(main["oldest_ready_seconds"] is Double || main["oldest_ready_seconds"] is Int)
        let minute = try #require(main["last_minute"] as? [String: Int])
        #expect(minute == ["delivered": 1, "dead": 1, "dropped": 1])
        #expect(apps[1]["paused"] as? Bool == true)
        #expect(apps[1]["pause_reason"] as? String == "rotating the key")
        #expect(apps[1]["paused_at"] is Int)
        #expect(run.json["totals"] == nil)

        let text = try admin(["status"])
        #expect(text.status == 0)
        #expect(text.stdout.hasPrefix("APP "))
        #expect(text.stdout.contains("second is paused since"))
        #expect(text.stdout.contains("rotating the key"))

        let totals = try admin(["status", "--totals", "--json"])
        let rows = try #require(totals.json["totals"] as? [[String: Any]])
        let delivered = rows.first { $0["app"] as? String == "default" && $0["state"] as? String == "delivered" }
        #expect(delivered?["count"] as? Int == 1)
    }

    @Test func statusSaysWhatClosedAGateAndSinceWhen() throws {
        try migrate()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try store().closeGate("default", until: now + 60_000, reason: .reset, now: now - 3_000)
        try store().closeGate("second", until: now + 30_000, reason: .http(503), now: now - 1_000)

        let run = try admin(["status", "--json"])
        #expect(run.status == 0)
        let apps = try #require(run.json["apps"] as? [[String: Any]])
        #expect(apps.map { $0["gated"] as? Bool } == [true, true])
        #expect(apps.map { $0["gate_reason"] as? String } == ["reset", "http_503"])
        #expect(apps.map { ($0["gated_since"] as? Int).map(Int64.init) } == [now - 3_000, now - 1_000])

        let text = try admin(["status"])
        let note = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix("default is gated until") })
        #expect(note.contains("after a connection reset (since \(Output.time(now - 3_000)), "), "\(note)")
        #expect(text.stdout.contains("second is gated until"))
        #expect(text.stdout.contains("after an HTTP 503 answer"))
    }

    // MARK: - dead

    /// Four dead letters: two InvalidRegistration of app default (one died 2 h ago), one MismatchSenderId, one of
    /// app second; and a delivered row.
    func prepareDeadLetters() throws {
        try migrate()
        _ = try send(#"{"registration_ids": ["inv-1", "inv-old", "mis-1", "fine"]}"#)
        _ = try send(#"{"to": "other-1", "app": "second"}"#)
        try set("inv-1", "dead", reason: "InvalidRegistration")
        try set("inv-old", "dead", reason: "InvalidRegistration", ago: 2 * 3_600_000)
        try set("mis-1", "dead", reason: "MismatchSenderId")
        try set("other-1", "dead", reason: "InvalidRegistration")
        try set("fine", "delivered")
    }

    func deadTokens(_ arguments: [String]) throws -> [String] {
        let run = try admin(["dead", "list", "--json"] + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        return (run.json["dead_letters"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }.sorted()
    }

    @Test func deadListFiltersByAppReasonAndAge() throws {
        try prepareDeadLetters()
        #expect(try deadTokens([]) == ["inv-1", "inv-old", "mis-1", "other-1"])
        #expect(try deadTokens(["--app", "default"]) == ["inv-1", "inv-old", "mis-1"])
        #expect(try deadTokens(["--reason", "InvalidRegistration"]) == ["inv-1", "inv-old", "other-1"])
        #expect(try deadTokens(["--since", "1h"]) == ["inv-1", "mis-1", "other-1"])
        #expect(try deadTokens(["--app", "default", "--reason", "InvalidRegistration", "--since", "90m"]) == ["inv-1"])
        #expect(try deadTokens(["--limit", "1"]).count == 1)

        let text = try admin(["dead", "list", "--reason", "MismatchSenderId"])
        #expect(text.status == 0)
        #expect(text.stdout.hasPrefix("ID "))
        #expect(text.stdout.contains("mis-1") && !text.stdout.contains("inv-1"))
    }

    @Test func deadShowGivesTheDeliveryAndItsMessage() throws {
        try prepareDeadLetters()
        let id = try deliveryID("mis-1")
        let run = try admin(["dead", "show", String(id), "--json"])
        #expect(run.status == 0)
        #expect(run.json["token"] as? String == "mis-1")
        #expect(run.json["reason"] as? String == "MismatchSenderId")
        #expect(run.json["expired"] as? Bool == false)
        let message = try #require(run.json["message"] as? [String: Any])
        #expect(message["id"] as? String == run.json["message_id"] as? String)
        #expect(message["deliveries"] == nil)

        let fine = try deliveryID("fine")
        #expect(try admin(["dead", "show", String(fine)]).status == 1, "a delivered row is not a dead letter")
    }

    @Test func requeueMakesMatchingDeadLettersQueuedWithNoAttempts() throws {
        try prepareDeadLetters()
        let run = try admin(["dead", "requeue", "--reason", "InvalidRegistration", "--app", "default", "--json"])
        #expect(run.status == 0)
        #expect(run.json["requeued"] as? Int == 2)
        #expect(run.json["skipped_expired"] as? Int == 0)
        #expect(try row("inv-1") == "queued - 0")
        #expect(try row("inv-old") == "queued - 0")
        #expect(try row("mis-1") == "dead MismatchSenderId 3")
        #expect(try row("other-1") == "dead InvalidRegistration 3")
        let due = try count(
            "SELECT count(*) FROM deliveries WHERE token = 'inv-1' AND next_attempt_at <= unixepoch() * 1000 + 1000")
        #expect(due == 1, "a requeued dead letter is due now")
    }

    @Test func requeueByIdAndSkippingExpiredMessages() throws {
        try migrate()
        _ = try send(#"{"to": "short", "time_to_live": 1}"#)
        _ = try send(#"{"to": "long"}"#)
        try set("short", "dead", reason: "MismatchSenderId")
        try set("long", "dead", reason: "MismatchSenderId")
        try connection().run("UPDATE messages SET expires_at = created_at WHERE ttl_seconds = 1")
        let long = try deliveryID("long")

        let byID = try admin(["dead", "requeue", String(long), "--json"])
        #expect(byID.json["requeued"] as? Int == 1)
        let rest = try admin(["dead", "requeue"])
        #expect(rest.status == 0)
        #expect(rest.stdout.contains("requeued 0 dead letters; skipped 1 whose message expired"), "\(rest.stdout)")
        #expect(try row("short") == "dead MismatchSenderId 3")
    }

    @Test func purgeShowsWhatItWouldDeleteUntilToldYes() throws {
        try prepareDeadLetters()
        let dry = try admin(["dead", "purge", "--reason", "InvalidRegistration", "--json"])
        #expect(dry.status == 1)
        #expect(dry.json["would_delete"] as? Int == 3)
        #expect(dry.stderr.contains("--yes"))
        #expect(try count("SELECT count(*) FROM deliveries WHERE state = 'dead'") == 4)

        let run = try admin(["dead", "purge", "--reason", "InvalidRegistration", "--yes", "--json"])
        #expect(run.status == 0)
        #expect(run.json["deleted"] as? Int == 3)
        #expect(run.json["messages_deleted"] as? Int == 1, "other-1's message had nothing else; the other message has")
        #expect(try deadTokens([]) == ["mis-1"])
        #expect(try row("fine") == "delivered - 3")
    }

    /// The whole loop an operator runs: a dead letter, a fix, `dead requeue` while `serve` runs, and a delivery.
    @Test func aRunningServeDeliversARequeuedDeadLetter() async throws {
        try migrate()
        let id = try send(#"{"to": "tok-requeued", "data": {"n": "1"}}"#)
        try set("tok-requeued", "dead", reason: "MismatchSenderId", attempts: 4)
        let service = try HeraldProcess(directory: directory, arguments: ["--sandbox"])
        #expect(try row("tok-requeued") == "dead MismatchSenderId 4", "serve must leave dead letters alone")

        let run = try admin(["dead", "requeue", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.json["requeued"] as? Int == 1)
        let settled = HeraldProcess.summary(try await service.waitUntilSettled(id))
        #expect(settled["tok-requeued"] == "delivered - 1 -", "requeued with attempts 0, then sent once")

        let status = try admin(["status", "--json"])
        let apps = try #require(status.json["apps"] as? [[String: Any]])
        // Counts, not the last minute's figures: a busy machine may hold this test up for longer than a minute.
        #expect(apps.first?["queued"] as? Int == 0 && apps.first?["dead"] as? Int == 0, "status reads while serve runs")
        #expect(service.stop() == 0)
    }

    // MARK: - prune and backup

    @Test func pruneDeletesOldDeliveredAndDroppedRowsButKeepsDeadLettersAndTheirMessages() throws {
        try migrate()
        let old = try send(#"{"registration_ids": ["old-ok", "old-gone"]}"#)
        let withDead = try send(#"{"registration_ids": ["old-ok-2", "old-dead"]}"#)
        let recent = try send(#"{"to": "new-ok"}"#)
        try set("old-ok", "delivered", ago: 8 * Self.day)
        try set("old-gone", "dropped", reason: "NotRegistered", ago: 8 * Self.day)
        try set("old-ok-2", "delivered", ago: 8 * Self.day)
        try set("old-dead", "dead", reason: "InvalidRegistration", ago: 30 * Self.day)
        try set("new-ok", "delivered", ago: Self.day)
        // Messages this old are past their idempotency window.
        try connection().run(
            "UPDATE messages SET created_at = created_at - ? WHERE id != ?", .integer(9 * Self.day), .text(recent))

        let dry = try admin(["prune", "--dry-run", "--json"])
        #expect(dry.json["would_delete_deliveries"] as? Int == 3)
        #expect(try count("SELECT count(*) FROM deliveries") == 5)

        let run = try admin(["prune", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.json["deliveries"] as? Int == 3)
        #expect(run.json["messages"] as? Int == 1)
        #expect(run.json["dead_letters_kept"] as? Int == 1)
        #expect(try store().message(id: old) == nil)
        #expect(try store().message(id: withDead)?.deliveries.map(\.token) == ["old-dead"])
        #expect(try store().message(id: recent)?.deliveries.map(\.state) == [.delivered])

        let shorter = try admin(["prune", "--older-than", "12h"])
        #expect(shorter.status == 0)
        #expect(shorter.stdout.hasPrefix("deleted 1 delivered or dropped delivery"), "\(shorter.stdout)")
        #expect(try row("old-dead") == "dead InvalidRegistration 3", "retention never deletes a dead letter")
    }

    @Test func backupWritesAPrivateCopyWithTheSameRowsAndNeverOverwrites() throws {
        try migrate()
        _ = try send(#"{"registration_ids": ["a", "b", "c"]}"#)
        #expect(try admin(["tokens", "add", "a", "--user", "u1"]).status == 0)
        let path = directory.appendingPathComponent("backup.db").path
        let run = try admin(["backup", path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.json["path"] as? String == path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)

        let copy = try Connection(path: path, mode: .readOnly)
        for table in ["messages", "deliveries", "tokens", "apps", "schema_migrations"] {
            let original = try count("SELECT count(*) FROM \(table)")
            #expect(try copy.queryOne("SELECT count(*) FROM \(table)") { $0.int(0) } == original, "\(table)")
        }
        #expect(try herald(["status", "--db", path]).status == 0, "the copy is a working database")

        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let again = try admin(["backup", path])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    // MARK: - webpush-keys

    @Test func webpushKeysWritesAPrivateKeyFileAndPrintsItsApplicationServerKey() throws {
        let path = directory.appendingPathComponent("vapid.pem").path
        let run = try herald(["webpush-keys", "--out", path])
        #expect(run.status == 0, "\(run.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let key = try P256PrivateKey(pem: pem)
        let applicationServerKey = Base64URL.encode(key.publicKey.uncompressedPoint)
        #expect(run.stdout.contains("\napplicationServerKey: \(applicationServerKey)\n"), "\(run.stdout)")
        #expect(run.stdout.contains(#""vapid_private_key_file": "\#(path)""#))
        #expect(!run.stdout.contains("PRIVATE KEY"), "the key itself stays in the file")
        #expect(try VAPID(key: key, subject: "mailto:ops@example.com").publicKeyText == applicationServerKey)

        let again = try herald(["webpush-keys", "--out", path])
        #expect(again.status == 1)
        #expect(again.stderr.contains("\(path) already exists; webpush-keys never overwrites a file"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == pem)

        let json = try herald(["webpush-keys", "--out", path + ".2", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.json["private_key_file"] as? String == path + ".2")
        let written = try P256PrivateKey(pem: String(contentsOfFile: path + ".2", encoding: .utf8))
        #expect(json.json["application_server_key"] as? String
            == Base64URL.encode(written.publicKey.uncompressedPoint))
    }

    // MARK: - secrets-key

    @Test func secretsKeyWritesAKeyFileOnlyHeraldCanReadAndNeverOverwritesOne() throws {
        let path = directory.appendingPathComponent("secrets.key").path
        let run = try herald(["secrets-key", "--out", path, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        let key = try SecretsKey(fileText: String(contentsOfFile: path, encoding: .utf8))
        #expect(run.json["key_id"] as? String == key.id)
        #expect(run.json["file"] as? String == path)

        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let again = try herald(["secrets-key", "--out", path])
        #expect(again.status == 1)
        #expect(again.stderr.contains("\(path) already exists; secrets-key never overwrites a file"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try herald(["secrets-key"]).status == 2, "the key is never printed: --out is required")

        // serve reads it, says its id, and warns when other users may read the file.
        chmod(path, 0o644)
        let serve = try HeraldProcess(
            directory: directory, arguments: ["--sandbox", "--secrets-key-file", path])
        serve.stop()
        #expect(serve.log.contains(#""secrets_key_id":"\#(key.id)""#))
        #expect(serve.log.contains("the secrets key file can be read by other users"))
        let garbled = directory.appendingPathComponent("garbled.key").path
        try "# a comment\nnot a key\n".write(toFile: garbled, atomically: true, encoding: .utf8)
        let refused = try herald(["serve", "--sandbox", "--secrets-key-file", garbled, "--db",
                                  directory.appendingPathComponent("g.db").path])
        #expect(refused.status == 2 && refused.stderr.contains("not a secrets key file"), "\(refused.stderr)")
    }

    @Test func webpushKeysWithoutAFilePrintsThePEMThenTheApplicationServerKey() throws {
        let run = try herald(["webpush-keys"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let key = try P256PrivateKey(pem: run.stdout)
        let lines = run.stdout.split(separator: "\n")
        let end = try #require(lines.firstIndex(of: "-----END PRIVATE KEY-----"))
        #expect(lines[end + 1] == "applicationServerKey: \(Base64URL.encode(key.publicKey.uncompressedPoint))")
        #expect(run.stdout.contains("vapid_private_key_file"))

        let json = try herald(["webpush-keys", "--json"])
        let pem = try #require(json.json["private_key_pem"] as? String)
        #expect(json.json["application_server_key"] as? String
            == Base64URL.encode(try P256PrivateKey(pem: pem).publicKey.uncompressedPoint))
        #expect(try herald(["webpush-keys"]).stdout != run.stdout, "a new key each time")
    }

    @Test(arguments: [["webpush-keys", "extra"], ["webpush-keys", "--out"], ["webpush-keys", "--db", "x"]])
    func webpushKeysUsageMistakesExitTwo(_ arguments: [String]) throws {
        let run = try herald(arguments)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test func webpushKeysSaysWhyItCannotCreateTheFile() throws {
        let run = try herald(["webpush-keys", "--out", directory.appendingPathComponent("no/such/dir.pem").path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("cannot create") && run.stderr.contains("No such file or directory"))
    }

    // MARK: - tokens and token-events

    @Test func tokensAddListShowAndDelete() throws {
        try migrate()
        let added = try admin(["tokens", "add", "tok-1", "--user", "u1", "--json"])
        #expect(added.status == 0)
        #expect(added.json["created"] as? Bool == true)
        #expect(added.json["app"] as? String == "default")
        let second = try admin(["tokens", "add", "tok-2", "--app", "second", "--user", "u1"])
        #expect(second.stdout == "tok-2: registered (app second, user u1)\n")
        #expect(try admin(["tokens", "add", "tok-1", "--user", "u2", "--json"]).json["created"] as? Bool == false)

        let all = try admin(["tokens", "list", "--json"])
        #expect((all.json["tokens"] as? [[String: Any]])?.compactMap { $0["token"] as? String } == ["tok-1", "tok-2"])
        let filtered = try admin(["tokens", "list", "--app", "second", "--user", "u1", "--json"])
        #expect((filtered.json["tokens"] as? [[String: Any]])?.compactMap { $0["token"] as? String } == ["tok-2"])
        let table = try admin(["tokens", "list"])
        #expect(table.stdout.hasPrefix("TOKEN "))

        let shown = try admin(["tokens", "show", "tok-1", "--json"])
        #expect(shown.json["user"] as? String == "u2")
        #expect(try admin(["tokens", "delete", "tok-1"]).status == 0)
        #expect(try admin(["tokens", "show", "tok-1"]).status == 1)
        #expect(try admin(["tokens", "delete", "tok-1"]).status == 1)

        // A registered user's tokens are what `send` with "users" expands to.
        let run = try admin(["send", #"{"users": ["u1"], "app": "second"}"#, "--json"])
        #expect(run.json["deliveries"] as? Int == 1)
    }

    @Test func tokenEventsPagesThroughTheFeed() throws {
        try migrate()
        let connection = try connection()
        for (index, token) in ["t1", "t2", "t3"].enumerated() {
            try connection.run(
                """
                INSERT INTO token_events (at, app, token, kind, replacement, reason, message_id)
                VALUES (?, 'default', ?, ?, ?, ?, 'm')
                """,
                .integer(Int64(index)), .text(token), .text(index == 1 ? "replaced" : "deleted"),
                .optional(index == 1 ? "t2-new" : nil), .text(index == 1 ? "CanonicalId" : "NotRegistered"))
        }
        let first = try admin(["token-events", "--limit", "2", "--json"])
        #expect(first.status == 0)
        let events = try #require(first.json["events"] as? [[String: Any]])
        #expect(events.compactMap { $0["token"] as? String } == ["t1", "t2"])
        #expect(events[1]["replacement"] as? String == "t2-new")
        let next = try #require(first.json["next"] as? Int)
        let second = try admin(["token-events", "--after", String(next), "--json"])
        #expect((second.json["events"] as? [[String: Any]])?.compactMap { $0["token"] as? String } == ["t3"])
        let text = try admin(["token-events"])
        #expect(text.stdout.contains("replaced") && text.stdout.contains("next: 3"))
    }

    // MARK: - Secrets

    @Test func noCommandPrintsTheFCMKey() async throws {
        let service = try HeraldProcess(directory: directory, arguments: ["--sandbox", "--fcm-key", Self.fcmKey])
        let id = try send(#"{"registration_ids": ["tok-1", "invalid-2"]}"#)
        _ = try await service.waitUntilSettled(id)
        let backup = directory.appendingPathComponent("copy.db").path
        let commands: [[String]] = [
            ["status"], ["status", "--json", "--totals"], ["message", id], ["message", id, "--json"],
            ["dead", "list"], ["dead", "list", "--json"], ["tokens", "list"], ["token-events"], ["prune", "--dry-run"],
            ["backup", backup], ["status", "--fcm-key", Self.fcmKey], ["status", "--fcm-key=\(Self.fcmKey)"],
        ]
        for command in commands {
            let run = try herald(command + ["--db", db], environment: ["HERALD_FCM_KEY": Self.fcmKey])
            let printed = run.stdout.contains(Self.fcmKey) || run.stderr.contains(Self.fcmKey)
            #expect(!printed, "\(command) printed the key")
        }
        #expect(service.stop() == 0)
        let copy = try Data(contentsOf: URL(fileURLWithPath: backup))
        #expect(copy.range(of: Data(Self.fcmKey.utf8)) == nil, "the key reached the database")
    }
}
