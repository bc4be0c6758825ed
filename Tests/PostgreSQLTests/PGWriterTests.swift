import Foundation
import Queue
import Storage
import Support
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport
import TestSupport

private let t0: Int64 = 1_700_000_000_000

typealias WriterJob<T> = @Sendable (PGQueueStore) throws -> T

/// PostgreSQL's writer: group commit, a job's failure kept to the job, retries after deadlocks, and what happens
/// when the connection breaks. Each test has a database of its own, so sessions can be found and ended by name.
@Suite struct PGWriterTests {
    struct Refused: Error, Equatable {}

    let database: TestDatabase
    let writer: PGWriter

    init() throws {
        database = try TestDatabase()
        writer = try PGWriter(url: database.url)
    }

    private static func message(_ app: String = "default", key: String? = nil, tokens: [String] = ["a"])
        -> NewMessage
    {
        NewMessage(app: app, idempotencyKey: key, payload: "{}", target: .tokens(tokens))
    }

    private func messageCount(app: String? = nil) throws -> Int {
        guard let app else { return try database.count("SELECT count(*) FROM messages") }
        return try database.count("SELECT count(*) FROM messages WHERE app = $1", [.text(app)])
    }

    /// Enqueues `jobs` while the writer is held, so they are committed as one group; returns their results in
    /// order.
    private func group<T: Sendable>(_ jobs: [WriterJob<T>]) -> [Result<T, Error>] {
        group(jobs.count) { index, completion in writer.enqueue(jobs[index], completion: completion) }
    }

    /// Ingest's writes of `writes`' messages as one group.
    private func group(writes: [[NewMessage]]) -> [Result<[AcceptedMessage], Error>] {
        group(writes.count) { index, completion in writer.insertMessages(writes[index], completion: completion) }
    }

    /// Calls `enqueue` `count` times while the writer is held; returns the results in order.
    private func group<T: Sendable>(
        _ count: Int, _ enqueue: (Int, @escaping @Sendable (Result<T, Error>) -> Void) -> Void
    ) -> [Result<T, Error>] {
        let gate = WriterGate(writer)
        let results = Collected<(Int, Result<T, Error>)>()
        let done = DispatchGroup()
        for index in 0..<count {
            done.enter()
            enqueue(index) { result in
                results.append((index, result))
                done.leave()
            }
        }
        gate.open()
        done.wait()
        return results.all.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// The writer connection's round trips so far.
    private func roundTrips() throws -> Int { try writer.write { $0.connection.roundTrips } }

    // MARK: - Group commit

    @Test func aGroupCommitStoresEveryJobAndAnswersEachWithItsOwnResult() throws {
        defer { writer.close() }
        let jobs: [WriterJob<(id: String, transaction: Int64)>] = (0..<50).map { index in
            { store in
                let accepted = try store.insertMessage(Self.message(key: "k\(index)"), now: t0)
                let transaction = try store.connection.queryOne("SELECT txid_current()") { $0.int64(0) } ?? 0
                return (accepted.id, transaction)
            }
        }
        let answers = try group(jobs).map { try $0.get() }
        #expect(Set(answers.map(\.id)).count == 50)
        #expect(Set(answers.map(\.transaction)).count == 1, "the group was committed as one transaction")
        let stored = try database.connect().query(
            "SELECT id FROM messages WHERE idempotency_key = $1", [.text("k7")]) { $0.string(0) }
        #expect(stored == [answers[7].id])
        #expect(try messageCount() == 50)
    }

    @Test func aFailingJobInAGroupLeavesTheOthersStored() throws {
        defer { writer.close() }
        let jobs: [WriterJob<String>] = [
            { try $0.insertMessage(Self.message("one"), now: t0).id },
            { store in
                _ = try store.insertMessage(Self.message("thrown"), now: t0)
                throw Refused()
            },
            { store in
                _ = try store.insertMessage(Self.message("failed-statement"), now: t0)
                return try store.connection.queryOne("SELECT (1 / 0)::text") { $0.string(0) } ?? ""
            },
            { try $0.insertMessage(Self.message("two"), now: t0).id },
        ]
        let results = group(jobs)
        #expect(throws: Refused.self) { try results[1].get() }
        #expect((results[2].failureError as? PGError)?.sqlState == "22012")
        #expect(try messageCount(app: "one") == 1 && messageCount(app: "two") == 1)
        #expect(try messageCount(app: "thrown") == 0 && messageCount(app: "failed-statement") == 0)
        #expect(try database.count("SELECT count(*) FROM apps WHERE name IN ('thrown', 'failed-statement')") == 0)
    }

    /// A group runs without savepoints until a job fails; then it is rolled back and played again in savepoints.
    /// The jobs before the failed one run again and are stored once; the failed job is not run a second time.
    @Test func aJobFailingInAGroupRunsOnceAndTheJobsBeforeItAreStoredOnce() throws {
        defer { writer.close() }
        let runs = Counter()
        let jobs: [WriterJob<String>] = [
            { try $0.insertMessage(Self.message("before", key: "b"), now: t0).id },
            { try $0.insertMessage(Self.message("before", key: "c"), now: t0).id },
            { store in
                runs.increment()
                _ = try store.insertMessage(Self.message("refused"), now: t0)
                throw Refused()
            },
            { try $0.insertMessage(Self.message("after"), now: t0).id },
        ]
        let results = group(jobs)
        #expect(throws: Refused.self) { try results[2].get() }
        #expect(runs.count == 1)
        let before = try database.connect().query(
            "SELECT id FROM messages WHERE app = 'before' ORDER BY idempotency_key") { $0.string(0) }
        #expect(before == [try results[0].get(), try results[1].get()])
        #expect(try messageCount(app: "refused") == 0 && messageCount(app: "after") == 1)
    }

    // MARK: - Ingest's writes

    /// A group of writes pays round trips per group, not per message: its BEGIN and the statement storing every
    /// message of it in one pipeline, then COMMIT; a look-up of their idempotency keys one more.
    @Test func aGroupOfWritesCostsTheSameRoundTripsWhateverItsSize() throws {
        defer { writer.close() }
        // Statements are prepared once per session: the first writes pay for that.
        _ = try writer.write { try $0.insertMessage(Self.message(key: "warm-up"), now: t0) }
        for (keyed, expected) in [(false, 2), (true, 3)] {
            for size in [1, 40] {
                let before = try roundTrips()
                let writes = (0..<size).map { index in
                    [Self.message(key: keyed ? "k\(size)-\(index)" : nil, tokens: ["t\(index)"])]
                } + [(0..<100).map { Self.message(tokens: ["batch\($0)"]) }]
                let answers = try group(writes: writes).map { try $0.get() }
                #expect(try roundTrips() - before == expected, "\(size) writes, keyed: \(keyed)")
                #expect(answers.joined().allSatisfy { $0.deliveries == 1 && !$0.isRepeat })
                #expect(Set(answers.joined().map(\.id)).count == size + 100)
            }
        }
        #expect(try messageCount() == 1 + 2 * (1 + 40 + 200))
    }

    /// The third write of a group fails in the statement that stores them all (a TTL the schema refuses): the group
    /// is rolled back and played again one write at a time, and only that write fails.
    @Test func aGroupWhoseThirdWriteFailsStoresTheOthersAndFailsOnlyIt() throws {
        defer { writer.close() }
        var refused = Self.message("refused")
        refused.ttlSeconds = 99_999_999
        let writes = [
            [Self.message("one")], [Self.message("two", key: "k2")], [refused, Self.message("refused")],
            [Self.message("four")], (0..<10).map { Self.message("five", tokens: ["f\($0)"]) },
        ]
        let results = group(writes: writes)
        #expect((results[2].failureError as? PGError)?.sqlState == "23514")
        for index in [0, 1, 3, 4] { #expect(try results[index].get().count == writes[index].count) }
        #expect(try messageCount(app: "refused") == 0)
        #expect(try database.count("SELECT count(*) FROM apps WHERE name = 'refused'") == 0)
        #expect(try messageCount() == 1 + 1 + 1 + 10)
    }

    /// A write refused by ingest's rules (an idempotency conflict) is refused before anything of it is written: it
    /// fails alone, and the group is not played again.
    @Test func aWriteWithAConflictingKeyFailsAloneWithoutReplayingTheGroup() throws {
        defer { writer.close() }
        _ = try writer.write { store in
            // The apps' rows too, whose first insert is a round trip of its own.
            try ["one", "two", "five"].forEach { try store.ensureApp($0) }
            // Now, as the writes' own: a key answers for a day.
            return try store.insertMessage(Self.message(key: "taken", tokens: ["x"]), now: Clock.nowMillis())
        }
        let before = try roundTrips()
        let results = group(writes: [
            [Self.message("one")], [Self.message("two")],
            [Self.message("three"), Self.message(key: "taken", tokens: ["other"])],
            [Self.message(key: "taken", tokens: ["x"])], [Self.message("five")],
        ])
        #expect(try roundTrips() - before == 3)
        #expect(throws: IdempotencyConflict.self) { try results[2].get() }
        #expect(try results[3].get().first?.isRepeat == true)
        for index in [0, 1, 4] { #expect(try results[index].get().first?.isRepeat == false) }
        #expect(try messageCount(app: "three") == 0)
        #expect(try messageCount() == 4)
    }

    /// The connection breaks in the middle of the group's pipeline (the server ends the session while it stores the
    /// third write's message): every write of the group is answered with a transient error, none is stored, and the
    /// writer reconnects.
    @Test func aConnectionLostMidPipelineAnswersEveryWriteWithAnErrorAndStoresNone() throws {
        defer { writer.close() }
        _ = try database.connect().execute("""
            CREATE FUNCTION herald_test_end_session() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.app = 'doomed' THEN
                    PERFORM pg_terminate_backend(pg_backend_pid());
                    PERFORM pg_sleep(30);
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER end_session BEFORE INSERT ON messages
                FOR EACH ROW EXECUTE FUNCTION herald_test_end_session();
            """)
        let results = group(writes: [
            [Self.message("one")], [Self.message("two")], [Self.message("doomed")], [Self.message("four")],
        ])
        for result in results {
            let error = result.failureError as? PGError
            #expect(error?.isConnectionLost == true && error?.isTransient == true, "\(result)")
        }
        #expect(try messageCount() == 0)

        _ = try database.connect().execute("DROP TRIGGER end_session ON messages")
        eventually("the writer reconnects and writes again") {
            (try? writer.write { try $0.insertMessage(Self.message("later"), now: t0) }) != nil
        }
        #expect(try messageCount() == 1)
    }

    /// A deferred constraint is checked at COMMIT: the whole group is rolled back then, and every job that did
    /// not fail on its own is answered with the commit's error.
    @Test func aFailedCommitAnswersEveryJobWithItsErrorAndStoresNothing() throws {
        defer { writer.close() }
        try database.connect().execute("""
            CREATE TABLE once (v INT, CONSTRAINT once_v UNIQUE (v) DEFERRABLE INITIALLY DEFERRED);
            INSERT INTO once VALUES (1)
            """)
        let jobs: [WriterJob<String>] = [
            { try $0.insertMessage(Self.message("lost-with-the-commit"), now: t0).id },
            { store in
                try store.connection.run("INSERT INTO once VALUES (1)")
                return "inserted a duplicate, checked at commit"
            },
            { _ in throw Refused() },
        ]
        let results = group(jobs)
        #expect((results[0].failureError as? PGError)?.constraint == "once_v")
        #expect((results[1].failureError as? PGError)?.isUniqueViolation == true)
        #expect(throws: Refused.self) { try results[2].get() }
        #expect(try messageCount() == 0)
        // The apps row went with the commit, and the next insert makes it again.
        _ = try writer.write { try $0.insertMessage(Self.message("lost-with-the-commit"), now: t0) }
        #expect(try database.count("SELECT count(*) FROM apps WHERE name = 'lost-with-the-commit'") == 1)
    }

    @Test func aJobThatSwallowedAStatementErrorFailsAndIsUndone() throws {
        defer { writer.close() }
        let jobs: [WriterJob<String>] = [
            { store in
                _ = try store.insertMessage(Self.message("swallowed"), now: t0)
                _ = try? store.connection.run("SELECT 1 / 0")
                return "returned normally"
            },
            { try $0.insertMessage(Self.message("kept"), now: t0).id },
        ]
        let results = group(jobs)
        #expect((results[0].failureError as? PGError)?.sqlState == "25P02")
        #expect(try messageCount(app: "swallowed") == 0 && messageCount(app: "kept") == 1)

        // Alone, without a savepoint, the whole transaction is the job's.
        #expect((try? writer.write { store -> Int in
            _ = try store.insertMessage(Self.message("swallowed"), now: t0)
            _ = try? store.connection.run("SELECT 1 / 0")
            return 1
        }) == nil)
        #expect(try messageCount(app: "swallowed") == 0)
    }

    @Test func aGroupWithoutDurableJobsCommitsWithoutWaitingForTheFlush() throws {
        defer { writer.close() }
        let setting = Collected<String>()
        let done = DispatchGroup()
        for durable in [false, true] {
            done.enter()
            writer.enqueue(durable: durable, { (store: PGQueueStore) in
                try store.connection.queryOne("SELECT current_setting('synchronous_commit')") { $0.string(0) } ?? ""
            }) { result in
                setting.append("\(durable): \((try? result.get()) ?? "failed")")
                done.leave()
            }
            done.wait()
        }
        #expect(setting.all == ["false: off", "true: on"])
    }

    /// The outcome feed's lock comes first in a group that may end deliveries: while another session holds it, the
    /// group waits for it holding no row (no transaction id, no lock on a table), so the holder can never be
    /// waiting for one of its rows in turn. A group that ends no delivery does not take it.
    @Test func aGroupThatMayEndDeliveriesWaitsForTheFeedsLockBeforeTouchingAnyRow() throws {
        defer { writer.close() }
        let holder = try database.connect()
        let key = PGQueueStore.lockOutcomeFeed.arguments
        _ = try holder.run("SELECT pg_advisory_lock($1)", key)
        let plain = Rendezvous<[AcceptedMessage]>()
        writer.enqueue(durable: true, writesOutcomes: false, { (store: PGQueueStore) in
            try store.insertMessages([Self.message("plain")], now: t0)
        }) { plain.fulfil($0) }
        #expect(try plain.wait().count == 1)

        let ending = Rendezvous<[AcceptedMessage]>()
        writer.enqueue(durable: true, writesOutcomes: true, { (store: PGQueueStore) in
            try store.insertMessages([Self.message("ending")], now: t0)
        }) { ending.fulfil($0) }
        let writerLocks = """
            SELECT l.locktype || CASE WHEN l.granted THEN '' ELSE ' waiting' END FROM pg_locks l
            JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE a.application_name = 'herald-writer' AND a.datname = current_database()
            AND l.locktype IN ('advisory', 'transactionid', 'relation') ORDER BY 1
            """
        eventually("the writer waits for the feed's lock") {
            (try? holder.query(writerLocks) { $0.string(0) }) == ["advisory waiting"]
        }
        _ = try holder.run("SELECT pg_advisory_unlock($1)", key)
        #expect(try ending.wait().count == 1)
        #expect(try messageCount(app: "ending") == 1)
    }

    // MARK: - Retries

    @Test(arguments: [1, 3])
    func aDeadlockedJobRunsAgain(groupSize: Int) throws {
        defer { writer.close() }
        let attempts = Counter()
        var jobs: [WriterJob<String>] = [
            { store in
                _ = try store.insertMessage(Self.message("retried"), now: t0)
                if attempts.increment() == 1 {
                    throw PGError(sqlState: "40P01", message: "deadlock detected")
                }
                return "stored"
            },
        ]
        for index in 1..<groupSize { jobs.append({ try $0.insertMessage(Self.message("other\(index)"), now: t0).id }) }
        let results = group(jobs)
        #expect(try results[0].get() == "stored")
        #expect(attempts.count == 2)
        // The first attempt's writes were undone: one message, not two.
        #expect(try messageCount(app: "retried") == 1)
        #expect(try messageCount() == groupSize)
    }

    @Test(arguments: [1, 2])
    func aJobThatKeepsFailingSerializationGivesUp(groupSize: Int) throws {
        defer { writer.close() }
        let attempts = Counter()
        var jobs: [WriterJob<String>] = [
            { store in
                _ = try store.insertMessage(Self.message("doomed"), now: t0)
                attempts.increment()
                throw PGError(sqlState: "40001", message: "could not serialize access")
            },
        ]
        if groupSize > 1 { jobs.append({ try $0.insertMessage(Self.message("bystander"), now: t0).id }) }
        let results = group(jobs)
        #expect((results[0].failureError as? PGError)?.sqlState == "40001")
        #expect(attempts.count == PGWriter.maxAttempts)
        #expect(try messageCount(app: "doomed") == 0)
        #expect(try messageCount(app: "bystander") == groupSize - 1)
    }

    /// A real deadlock: the writer's job locks row 1 then waits for row 2, which another session holds while it
    /// waits for row 1. The writer, waiting first, is the one PostgreSQL's deadlock check (after `deadlock_timeout`,
    /// 1 s) aborts; the rollback (of the group, then played again in savepoints) frees row 1, the other session
    /// commits, and the job's second attempt succeeds. On a machine so busy that the other session starts waiting
    /// more than a second after the writer, the other session's check runs first instead; that round proves nothing
    /// and is played again.
    @Test func aRealDeadlockIsRolledBackToTheSavepointAndRetried() throws {
        defer { writer.close() }
        let setup = try database.connect()
        try setup.execute("CREATE TABLE pair (id INT PRIMARY KEY, v INT NOT NULL)")
        let writerPID = try writer.write { $0.connection.backendProcessID }
        for _ in 0..<5 {
            try setup.execute("DELETE FROM pair; INSERT INTO pair VALUES (1, 0), (2, 0)")
            let other = DeadlockingSession(url: database.url, writerPID: writerPID)
            let attempts = Counter()
            let jobs: [WriterJob<String>] = [
                { _ in "bystander" },
                { store in
                    attempts.increment()
                    try store.connection.run("UPDATE pair SET v = v + 1 WHERE id = 1")
                    try store.connection.run("UPDATE pair SET v = v + 1 WHERE id = 2")
                    return "done"
                },
            ]
            let results = group(jobs)
            let otherError = other.finish()
            #expect(try results[1].get() == "done")
            // The other session was a victim (first, or when the writer's retry met it again): no proof; again.
            if let otherError, otherError.sqlState == "40P01" { continue }
            #expect(otherError == nil)
            // Retried after the deadlock (on a very busy machine it may meet the other session once more), and
            // only the attempt that succeeded left its writes.
            #expect(attempts.count >= 2 && attempts.count <= PGWriter.maxAttempts)
            #expect(try setup.query("SELECT v FROM pair ORDER BY id") { $0.int(0) } == [11, 11])
            return
        }
        Issue.record("the other session was the one deadlocked in every round")
    }

    // MARK: - The cached apps

    @Test(arguments: [1, 2])
    func anAppsRowRolledBackWithItsJobIsCreatedAgain(groupSize: Int) throws {
        defer { writer.close() }
        var jobs: [WriterJob<String>] = [
            { store in
                _ = try store.insertMessage(Self.message("fresh"), now: t0)
                throw Refused()
            },
        ]
        if groupSize > 1 { jobs.append({ _ in "bystander" }) }
        _ = group(jobs)
        #expect(try database.count("SELECT count(*) FROM apps WHERE name = 'fresh'") == 0)
        _ = try writer.write { try $0.insertMessage(Self.message("fresh"), now: t0) }
        #expect(try database.count("SELECT count(*) FROM apps WHERE name = 'fresh'") == 1)
    }

    // MARK: - Losing the connection

    @Test func aConnectionLostDuringAGroupFailsEveryJobOfItAndStoresNothing() throws {
        defer { writer.close() }
        let url = database.url
        let jobs: [WriterJob<String>] = [
            { try $0.insertMessage(Self.message("before"), now: t0).id },
            { store in
                _ = try store.insertMessage(Self.message("killer"), now: t0)
                let killer = try PGConnection(url: url)
                _ = try killer.queryOne(
                    "SELECT pg_terminate_backend($1, 30000)", [.integer(Int64(store.connection.backendProcessID))]
                ) { $0.bool(0) }
                return try store.insertMessage(Self.message("killer"), now: t0).id
            },
            { try $0.insertMessage(Self.message("after"), now: t0).id },
        ]
        let results = group(jobs)
        for result in results {
            let error = result.failureError as? PGError
            #expect(error?.isConnectionLost == true && error?.isTransient == true, "\(result)")
        }
        #expect(try messageCount() == 0)
        #expect(try database.count("SELECT count(*) FROM apps") == 0)

        eventually("the writer reconnects and writes again") {
            (try? writer.write { try $0.insertMessage(Self.message("later"), now: t0) }) != nil
        }
        #expect(try messageCount() == 1)
        #expect(writer.isConnected)
    }

    /// A COMMIT whose answer is lost with the connection: the writer reconnects and asks the server what became of
    /// the group, and answers with that (here: stored) rather than "unknown", which ingest would answer 503 and a
    /// client would send again, storing the message twice.
    @Test func aCommitWhoseAnswerIsLostIsSettledWithTheServer() throws {
        defer { writer.close() }
        let dropper = try CommitDropper(upstream: database.url)
        let proxied = try PGWriter(url: dropper.url)
        defer { proxied.close() }

        try dropper.arm()
        let id = try proxied.write { try $0.insertMessage(Self.message(key: "once"), now: t0).id }

        #expect(try dropper.dropped() == 1, "the COMMIT's answer was lost")
        #expect(try database.count("SELECT count(*) FROM messages WHERE id = $1", [.text(id)]) == 1)
        _ = try proxied.write { try $0.insertMessage(Self.message(), now: t0) }
        #expect(try messageCount() == 2)
        #expect(proxied.isConnected)
    }

    /// The connection lost while the COMMIT was still running (a deferred trigger holds it): the server rolled the
    /// group back, and the writer, having asked, says so — nothing stored — rather than "unknown".
    @Test func aCommitCutOffBeforeItTookIsSettledAsNotStored() throws {
        defer { writer.close() }
        let admin = try database.connect()
        _ = try admin.execute("""
            CREATE FUNCTION herald_test_slow_commit() RETURNS trigger LANGUAGE plpgsql
                AS $$ BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON messages DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION herald_test_slow_commit();
            """)
        let answers = Collected<Result<String, Error>>()
        let answered = DispatchSemaphore(value: 0)
        writer.enqueue({ try $0.insertMessage(Self.message(), now: t0).id }) { result in
            answers.append(result)
            answered.signal()
        }
        // The writer's COMMIT waits in the trigger: end its session there.
        var ended = false
        for _ in 0..<500 where !ended {
            ended = try admin.queryOne(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND query = 'COMMIT' AND state = 'active'
                """) { $0.bool(0) } ?? false
            if !ended { usleep(10_000) }
        }
        #expect(ended, "the writer's COMMIT was found waiting")
        answered.wait()

        let error = answers.all.first?.failureError as? PGError
        #expect(error?.message.contains("rolled the transaction back") == true, "\(String(describing: error))")
        #expect(error?.isTransient == true)
        #expect(try messageCount() == 0)
        _ = try admin.execute("DROP TRIGGER slow_commit ON messages")
        _ = try writer.write { try $0.insertMessage(Self.message(), now: t0) }
        #expect(try messageCount() == 1)
    }

    @Test func aConnectionBrokenWhileIdleIsResetForTheNextWriteWithItsSettings() throws {
        defer { writer.close() }
        try writer.write { $0.ttlZeroWindowMillis = 1234 }
        let first = try writer.write { $0.connection.backendProcessID }
        try database.terminate(pid: first)

        let accepted = try writer.write { try $0.insertMessage(Self.message(), now: t0) }
        #expect(accepted.deliveries == 1)
        #expect(try writer.write { $0.connection.backendProcessID } != first)
        #expect(try writer.write { $0.ttlZeroWindowMillis } == 1234)
    }

    @Test func whileTheServerCannotBeReachedWritesAreRefusedAtOnceUntilItIsBack() throws {
        defer { writer.close() }
        try database.allowConnections(false)
        defer { try? database.allowConnections(true) }
        #expect(try database.terminate(applicationName: "herald-writer") == 1)

        // The write that finds the connection gone cannot reconnect either.
        let failed = #expect(throws: PGError.self) {
            try writer.write { try $0.insertMessage(Self.message(), now: t0) }
        }
        #expect(failed?.isTransient == true)
        #expect(!writer.isConnected)

        // Now jobs are answered without running.
        let ran = Counter()
        let refused = #expect(throws: PGError.self) {
            try writer.write { (_: PGQueueStore) in ran.increment() }
        }
        #expect(refused?.isConnectionLost == true)
        #expect(ran.count == 0)
        for secret in PGConnectionString.secrets(in: database.url) {
            #expect(refused?.description.contains(secret) == false, "the password leaked")
        }

        try database.allowConnections(true)
        eventually("the writer reconnects") {
            (try? writer.write { try $0.insertMessage(Self.message("back"), now: t0) }) != nil
        }
        #expect(writer.isConnected)
        #expect(try messageCount() == 1)
    }

    @Test func closingWhileDisconnectedStopsReconnecting() throws {
        try database.allowConnections(false)
        defer { try? database.allowConnections(true) }
        #expect(try database.terminate(applicationName: "herald-writer") == 1)
        #expect(throws: PGError.self) { try writer.write { (_: PGQueueStore) in } }
        writer.close()
        let closed = #expect(throws: PGError.self) { try writer.write { (_: PGQueueStore) in } }
        #expect(closed?.isConnectionLost == true || closed?.sqlState == "08003")
    }

    @Test func anUnreachableServerIsNamedWithoutItsPassword() throws {
        defer { writer.close() }
        let error = #expect(throws: PGError.self) {
            try PGWriter(url: "postgresql://herald:hunter2secret@127.0.0.1:1/herald", connectTimeoutSeconds: 5)
        }
        #expect(error?.description.contains("127.0.0.1") == true)
        #expect(error?.description.contains("hunter2secret") == false)
    }
}

extension Result {
    var failureError: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The other side of `aRealDeadlockIsRolledBackToTheSavepointAndRetried`, on a thread of its own: holds row 2, waits
/// until the writer waits for it, then takes row 1 and commits.
private final class DeadlockingSession: Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let failure = Collected<PGError>()

    /// Returns once the session holds row 2.
    init(url: String, writerPID: Int32) {
        let holdsRow2 = DispatchSemaphore(value: 0)
        Thread { [finished, failure] in
            defer { finished.signal() }
            do {
                let session = try PGConnection(url: url)
                let watcher = try PGConnection(url: url)
                try session.execute("BEGIN")
                try session.run("UPDATE pair SET v = v + 10 WHERE id = 2")
                holdsRow2.signal()
                let waiting = "SELECT wait_event_type IS NOT DISTINCT FROM 'Lock' FROM pg_stat_activity WHERE pid = $1"
                while try watcher.queryOne(waiting, [.integer(Int64(writerPID))], row: { $0.bool(0) }) != true {
                    usleep(10_000)
                }
                try session.run("UPDATE pair SET v = v + 10 WHERE id = 1")
                try session.execute("COMMIT")
            } catch {
                holdsRow2.signal()
                failure.append(error as? PGError ?? PGError(message: "\(error)"))
            }
        }.start()
        holdsRow2.wait()
    }

    /// Waits for the session to end; its error, if it had one.
    func finish() -> PGError? {
        finished.wait()
        return failure.all.first
    }
}

/// `scripts/pg-commit-dropper.js` under node, in front of the test server: armed, it loses the answer to the next
/// COMMIT (closing both sides of that connection), so the transaction commits and the client never hears it.
private final class CommitDropper {
    let url: String
    private let process: Process
    private let state: String

    init(upstream: String) throws {
        guard var components = URLComponents(string: upstream), let upstreamPort = components.port else {
            throw PGError(message: "not a URL with a port: the test server's")
        }
        state = FileManager.default.temporaryDirectory.appendingPathComponent("pg-dropper-\(UUID().uuidString)").path
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "node", TestServer.packageRoot.appendingPathComponent("scripts/pg-commit-dropper.js").path,
            "--upstream-port", String(upstreamPort), "--state", state,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The first line is {"port": P}.
        var line: [UInt8] = []
        while let byte = output.fileHandleForReading.readData(ofLength: 1).first, byte != UInt8(ascii: "\n") {
            line.append(byte)
        }
        guard let port = (try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Int])?["port"] else {
            throw PGError(message: "the commit dropper did not start: \(String(decoding: line, as: UTF8.self))")
        }
        components.port = port
        // The proxy reads the server's messages from the first byte: no SSL or GSS negotiation before them.
        components.queryItems = [URLQueryItem(name: "sslmode", value: "disable"),
                                 URLQueryItem(name: "gssencmode", value: "disable")]
        url = components.string ?? ""
    }

    deinit {
        process.terminate()
        try? FileManager.default.removeItem(atPath: state)
    }

    /// Arms it, and waits until it says so.
    func arm() throws {
        kill(process.processIdentifier, SIGUSR1)
        for _ in 0..<500 where try current()["armed"] as? Bool != true { usleep(10_000) }
        guard try current()["armed"] as? Bool == true else { throw PGError(message: "the commit dropper did not arm") }
    }

    /// COMMIT answers it has lost so far.
    func dropped() throws -> Int { try current()["dropped"] as? Int ?? -1 }

    private func current() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: state))
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }
}
