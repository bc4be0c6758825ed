import Queue
import Storage
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

private let t0: Int64 = 1_700_000_000_000

/// "Quick at millions of rows" as a property checked without timing, as StorageTests' AdminQueryTests does for
/// SQLite: every status, dead-letter and retention statement can read deliveries through a partial index (or by
/// id, or one message's rows), never by scanning the table or an index of every row.
@Suite struct PGAdminPlanTests {
    /// Indexes any scan of `deliveries` may use; the primary key and `deliveries_by_message` only for look-ups.
    private static let partialIndexes = [
        "deliveries_ready", "deliveries_inflight", "deliveries_dead", "deliveries_dead_by_app", "deliveries_finished",
        "deliveries_dead_by_token",
    ]
    private static let lookupIndexes = ["deliveries_pkey", "deliveries_by_message"]

    @Test func adminStatementsReadDeliveriesThroughIndexes() throws {
        let schema = try PGTestSchema()
        let connection = try schema.connect()
        // An empty table would be read sequentially; the point is that an index can serve each statement.
        try connection.execute("SET enable_seqscan = off")
        var statements: [(String, [PGValue])] = [
            (PGStatusSQL.queued, [.integer(t0), .text("default")]),
            (PGStatusSQL.inflight, []),
            (PGStatusSQL.dead, []),
            (PGStatusSQL.deadSince, [.integer(t0)]),
            (PGStatusSQL.finishedSince, [.integer(t0)]),
            (PGRetentionSQL.pruneFinished, [.integer(t0), .integer(10)]),
            (PGRetentionSQL.countFinished, [.integer(t0)]),
            (PGRetentionSQL.pruneEmptyMessages, [.text(""), .text("Z"), .integer(t0), .integer(t0)]),
            (PGRetentionSQL.countDead, []),
            (PGDeadLetterSQL.deleteEmptyMessages, [.array(["m1", "m2"]), .integer(t0)]),
        ]
        let filters = [
            DeadLetterFilter(), DeadLetterFilter(app: "default"), DeadLetterFilter(reason: "MaxAttempts"),
            DeadLetterFilter(diedSince: t0), DeadLetterFilter(app: "default", reason: "MaxAttempts", diedSince: t0),
            DeadLetterFilter(deliveryIDs: [1, 2]),
            DeadLetterFilter(app: "default", diedUntil: t0, after: DeadLetterCursor(diedAt: t0, deliveryID: 9)),
            DeadLetterFilter(token: "t"),
        ]
        for filter in filters {
            let bound = { (first: Int) in filter.condition(parametersFrom: first) }
            let (one, arguments1) = bound(1)
            let (two, arguments2) = bound(2)
            let (three, arguments3) = bound(3)
            statements += [
                (PGDeadLetterSQL.list(two), [.integer(10)] + arguments2),
                (PGDeadLetterSQL.groups(one), arguments1),
                (PGDeadLetterSQL.expired(two), [.integer(t0)] + arguments2),
                (PGDeadLetterSQL.requeue(three), [.integer(t0), .integer(10)] + arguments3),
                (PGDeadLetterSQL.purge(two), [.integer(10)] + arguments2),
            ]
        }
        for (sql, arguments) in statements {
            let lines = try connection.query("EXPLAIN " + sql, arguments) { $0.string(0) }
            let plan = lines.joined(separator: "\n")
            #expect(!plan.contains("Seq Scan on deliveries"), "\(sql)\n\(plan)")
            for (index, line) in lines.enumerated() where line.contains("Scan") {
                guard let used = Self.indexName(in: line), used.hasPrefix("deliveries") else { continue }
                if Self.lookupIndexes.contains(used) {
                    let condition = lines.dropFirst(index + 1).first ?? ""
                    #expect(condition.contains("Index Cond"), "a whole-index scan of \(used): \(sql)\n\(plan)")
                } else {
                    #expect(Self.partialIndexes.contains(used), "\(used) in the plan of: \(sql)\n\(plan)")
                }
            }
        }
    }

    /// The index a plan line scans: `Index Scan using NAME on …`, `Index Only Scan using NAME …`,
    /// `Bitmap Index Scan on NAME`.
    private static func indexName(in line: String) -> String? {
        for marker in [" using ", "Bitmap Index Scan on "] {
            if let range = line.range(of: marker) {
                return line[range.upperBound...].split(separator: " ").first.map(String.init)
            }
        }
        return nil
    }
}
