/// Wake-ups across Heralds sharing one database: a write that makes deliveries ready notifies `readyChannel` with
/// the app's name, and every instance's `PGListener` hears it.
extension PGQueueStore {
    /// The channel ready deliveries are announced on; the payload is the app's name.
    public static let readyChannel = "herald_ready"

    /// Announces that `apps` have deliveries ready, when the caller's transaction commits (at once outside one).
    /// PostgreSQL folds identical notifications within a transaction, so naming an app many times costs nothing.
    ///
    /// `storeMessages` does this in its own statement; any other write that queues deliveries (a dead-letter
    /// requeue) calls this with the apps it touched.
    public func notifyReady(_ apps: [String]) throws {
        guard !apps.isEmpty else { return }
        try connection.run(
            "SELECT pg_notify($1, app) FROM unnest($2::text[]) AS app", .text(Self.readyChannel), .array(apps))
    }
}
