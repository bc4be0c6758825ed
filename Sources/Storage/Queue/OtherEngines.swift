/// What another engine's store (PostgreSQL's `PGQueueStore`) needs to give the answers SQLite's ingest gives.
extension IdempotencyConflict {
    /// The synthesized `init(key:)` is internal; this is the same for other modules.
    public init(reusedKey key: String) { self.key = key }
}
