import Queue

extension SQLiteQueueStore {
    // MARK: - Apps

    /// Gives `name` an `apps` row if it has none, once per connection rather than once per message. (`serve`
    /// creates the rows of its configured apps at start, so a rolled-back first insert cannot leave one out.)
    public func ensureApp(_ name: String) throws {
        guard !ensuredApps.contains(name) else { return }
        try connection.run("INSERT OR IGNORE INTO apps (name) VALUES (?)", .text(name))
        ensuredApps.insert(name)
    }

    public func appState(_ name: String) throws -> AppState? {
        try connection.queryOne(
            "SELECT name, paused, pause_reason, gate_until FROM apps WHERE name = ?", [.text(name)], row: Self.appRow)
    }

    public func apps() throws -> [AppState] {
        try connection.query("SELECT name, paused, pause_reason, gate_until FROM apps ORDER BY name", row: Self.appRow)
    }

    /// An `apps` row read as `name, paused, pause_reason, gate_until`.
    private static func appRow(_ row: Statement) -> AppState {
        AppState(name: row.string(0), paused: row.int(1) != 0, pauseReason: row.optionalString(2),
                 gateUntil: row.int64(3))
    }

    /// Pauses `app`; returns false when it was already paused.
    @discardableResult
    public func pauseApp(_ app: String, reason: String, now: Int64) throws -> Bool {
        try ensureApp(app)
        return try connection.run(
            "UPDATE apps SET paused = 1, pause_reason = ?, paused_at = ? WHERE name = ? AND paused = 0",
            .text(reason), .integer(now), .text(app)) > 0
    }

    /// Resumes `app` and opens its gate, and forgets its gated and paused origins; returns false when neither it nor
    /// any of its origins was paused.
    @discardableResult
    public func resumeApp(_ app: String) throws -> Bool {
        let pausedOrigins = try connection.queryOne(
            "SELECT count(*) FROM app_origins WHERE app = ? AND paused = 1", [.text(app)]) { $0.int(0) } ?? 0
        try connection.run("DELETE FROM app_origins WHERE app = ?", .text(app))
        return try connection.run(
            """
            UPDATE apps SET paused = 0, pause_reason = NULL, paused_at = NULL, gate_until = 0, gate_reason = NULL,
                gated_at = NULL
            WHERE name = ? AND paused = 1
            """,
            .text(app)) > 0 || pausedOrigins > 0
    }

    /// Closes the app's gate until `until` for `reason` (never shortens a gate already closed for longer). A gate
    /// still closed at `now` keeps the time it closed; an open one closes at `now`.
    public func closeGate(_ app: String, until: Int64, reason: GateReason, now: Int64) throws {
        try ensureApp(app)
        try connection.run(
            """
            UPDATE apps SET gate_until = ?1, gate_reason = ?2,
                gated_at = CASE WHEN gate_until <= ?3 OR gated_at IS NULL THEN ?3 ELSE gated_at END
            WHERE name = ?4 AND gate_until < ?1
            """,
            .integer(until), .text(reason.rawValue), .integer(now), .text(app))
    }

    // MARK: - Origins

    public func closeOriginGate(_ app: String, origin: String, until: Int64, reason: GateReason, now: Int64) throws {
        try connection.run(
            """
            INSERT INTO app_origins (app, origin, gate_until, gate_reason, gated_at) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (app, origin) DO UPDATE SET gate_until = ?3, gate_reason = ?4,
                gated_at = CASE WHEN gate_until <= ?5 OR gated_at IS NULL THEN ?5 ELSE gated_at END
            WHERE gate_until < ?3
            """,
            .text(app), .text(origin), .integer(until), .text(reason.rawValue), .integer(now))
    }

    @discardableResult
    public func pauseOrigin(_ app: String, origin: String, reason: String, now: Int64) throws -> Bool {
        try connection.run(
            """
            INSERT INTO app_origins (app, origin, paused, pause_reason, paused_at) VALUES (?1, ?2, 1, ?3, ?4)
            ON CONFLICT (app, origin) DO UPDATE SET paused = 1, pause_reason = ?3, paused_at = ?4 WHERE paused = 0
            """,
            .text(app), .text(origin), .text(reason), .integer(now)) > 0
    }

    public func originSwitches(app: String?, now: Int64) throws -> [OriginSwitch] {
        try connection.query(
            """
            SELECT app, origin, gate_until, gate_reason, gated_at, paused, pause_reason, paused_at FROM app_origins
            WHERE (?1 IS NULL OR app = ?1) AND (paused = 1 OR gate_until > ?2) ORDER BY app, origin
            """,
            [.optional(app), .integer(now)]
        ) { row in
            OriginSwitch(
                app: row.string(0), origin: row.string(1), gateUntil: row.int64(2),
                gateReason: row.optionalString(3).map(GateReason.init(stored:)), gatedAt: row.optionalInt64(4),
                paused: row.int(5) != 0, pauseReason: row.optionalString(6), pausedAt: row.optionalInt64(7))
        }
    }

    @discardableResult
    public func forgetOpenOrigins(now: Int64) throws -> Int {
        try connection.run("DELETE FROM app_origins WHERE paused = 0 AND gate_until <= ?", .integer(now))
    }
}
