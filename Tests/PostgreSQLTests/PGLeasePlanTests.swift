import Queue
import Storage
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

private let t0: Int64 = 1_700_000_000_000

/// The claim and every outcome statement reach their rows by primary key whatever the statistics say, under the
/// generic plan a prepared statement settles on as under a custom one: a plan that reads every row in flight (or
/// every delivery) per statement costs no correctness, only most of the delivery rate, so it is checked here
/// rather than left to a benchmark.
@Suite struct PGLeasePlanTests {
    /// A queue whose statistics were taken while nothing was in flight (the usual case: an idle or paused queue,
    /// a backlog just ingested), with rows in flight since.
    private func connectionToBusyQueue() throws -> (PGTestSchema, PGConnection) {
        let schema = try PGTestSchema()
        let connection = try schema.connect()
        let store = PGQueueStore(connection: connection)
        let tokens = (0..<2_000).map { "token-\($0)" }
        try store.write {
            _ = try $0.insertMessage(NewMessage(app: "default", payload: "{}", target: .tokens(tokens)), now: t0)
        }
        try connection.execute("ANALYZE deliveries")
        try connection.execute("ANALYZE messages")
        let claimed = try store.write {
            try $0.claim(app: "default", limit: 1_000, owner: "w", leaseMillis: 60_000, now: t0 + 1)
        }
        #expect(claimed.deliveries.count == 1_000)
        return (schema, connection)
    }

    /// `sql` prepared and explained for `arguments`, under `mode` (`force_generic_plan` or
    /// `force_custom_plan`).
    private func plan(
        _ connection: PGConnection, _ sql: String, _ arguments: [PGValue], mode: String
    ) throws -> String {
        try connection.execute("SET plan_cache_mode = \(mode)")
        // A name of its own each time (DEALLOCATE ALL would drop the connection's own prepared statements too).
        let name = "statement_under_test_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute("PREPARE \(name) AS " + sql)
        // EXECUTE takes no parameters of its own: the values go in as literals the server quoted.
        let quoting = (1...arguments.count).map { "quote_nullable($\($0)::text)" }.joined(separator: " || ', ' || ")
        let literals = try #require(try connection.queryOne("SELECT " + quoting, arguments) { $0.string(0) })
        return try connection.query("EXPLAIN EXECUTE \(name)(\(literals))") { $0.string(0) }
            .joined(separator: "\n")
    }

    @Test(arguments: ["force_generic_plan", "force_custom_plan"])
    func outcomesFindTheirRowsByPrimaryKey(mode: String) throws {
        let (schema, connection) = try connectionToBusyQueue()
        _ = schema
        let now: PGValue = .integer(t0 + 2)
        let statements: [(String, [PGValue])] = [
            (PGLeaseSQL.markDelivered, [1, "fcm-1", nil, 200, now, 5, "w"]),
            (PGLeaseSQL.markManyDelivered, [1, now, .array([Int64(5), 6, 7]), .array(["a", "b", "c"]),
                                            .array([Int64(200), 200, 200]), "w"]),
            (PGLeaseSQL.markEnded, ["dead", "MaxAttempts", 1, 500, now, 5, "w"]),
            (PGLeaseSQL.markRetry, ["Unavailable", 1, .integer(t0 + 60_000), 503, now, 5, "w"]),
            (PGLeaseSQL.markReleased, [now, 5, "w"]),
            (PGLeaseSQL.renewLeases, [60_000, .array([Int64(5), 6, 7]), "w", nil]),
        ]
        for (sql, arguments) in statements {
            let plan = try plan(connection, sql, arguments, mode: mode)
            #expect(plan.contains("deliveries_pkey"), "\(sql)\n\(plan)")
            #expect(!plan.contains("deliveries_inflight"), "\(sql)\n\(plan)")
            #expect(!plan.contains("Seq Scan on deliveries"), "\(sql)\n\(plan)")
        }
    }

    @Test(arguments: ["force_generic_plan", "force_custom_plan"])
    func theRescuerReadsOnlyTheLeasesThroughTheirIndex(mode: String) throws {
        let (schema, connection) = try connectionToBusyQueue()
        _ = schema
        let plan = try plan(connection, PGLeaseSQL.rescueExpiredLeases, [.integer(t0 + 2), nil], mode: mode)
        #expect(plan.contains("deliveries_inflight"), "\(plan)")
        #expect(!plan.contains("Seq Scan on deliveries"), "\(plan)")
    }

    @Test(arguments: ["force_generic_plan", "force_custom_plan"])
    func theClaimUpdatesTheRowsItLockedByPrimaryKey(mode: String) throws {
        let (schema, connection) = try connectionToBusyQueue()
        _ = schema
        let plan = try plan(
            connection, PGLeaseSQL.leaseReady, ["w2", 60_000, .integer(t0 + 2), "default", 1, 100, nil],
            mode: mode)
        #expect(plan.contains("deliveries_ready"), "\(plan)")
        #expect(plan.contains("LockRows"), "\(plan)")
        #expect(plan.contains("deliveries_pkey"), "\(plan)")
        #expect(!plan.contains("Seq Scan on deliveries"), "\(plan)")
    }
}
