import Support

/// An outcome webhook as `herald status`, `GET /v1/admin/overview` and the console show it: its stored state and
/// how far behind the feed it is.
public struct OutcomeWebhookStatus: Sendable, Equatable {
    public var state: OutcomeWebhookState
    /// When the oldest outcome past its cursor happened; nil when it has caught up. For the service-wide webhook this
    /// is the oldest of every app's, those it does not carry included (an app's own webhook carries them).
    public var oldestPendingAt: Int64?

    /// Milliseconds since the oldest outcome not yet acknowledged happened: 0 when there is none.
    public func lagMillis(now: Int64) -> Int64 {
        max(0, now - (oldestPendingAt ?? now))
    }

    public func json(now: Int64) -> JSON {
        .object([
            ("webhook", .string(state.name)),
            ("seq", .int(state.seq)),
            ("batches_in_flight", .int(Int64(state.inFlight.count))),
            ("lag_seconds", .double(Double(lagMillis(now: now)) / 1000)),
            ("skipped", .int(state.skipped)),
            ("last_error", state.lastError.map(JSON.string) ?? .null),
            ("last_error_at", state.lastErrorAt.map(JSON.int) ?? .null),
        ])
    }
}

extension Store {
    /// Every outcome webhook's status, by name (call inside `snapshot` to read them together).
    public func outcomeWebhookStatuses() throws -> [OutcomeWebhookStatus] {
        try outcomeWebhooks().map { state in
            let app = state.name == OutcomeWebhookState.serviceWide ? nil : state.name
            return OutcomeWebhookStatus(
                state: state, oldestPendingAt: try outcomes(after: state.seq, app: app, limit: 1).first?.at)
        }
    }
}
