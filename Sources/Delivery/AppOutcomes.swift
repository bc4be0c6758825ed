import Queue

/// One app's outcomes waiting in the outbox: the row updates, and the app switches they bring (a pause, a gate),
/// written together in the next outcome write.
struct AppOutcomes {
    var updates: [DeliveryUpdate] = []
    /// The first pause decided: the reason the app's row keeps.
    var pauseReason: String?
    /// The latest gate closing decided, with its reason: the one the app's row keeps.
    var gate: (until: Int64, reason: GateReason)?

    mutating func add(_ more: [DeliveryUpdate], plan: OutcomePlan?) {
        updates += more
        if let reason = plan?.pauseReason { pauseReason = pauseReason ?? reason }
        if let until = plan?.gateUntil { closeGate(until: until, reason: plan?.gateReason ?? .transport) }
    }

    /// Puts outcomes decided earlier (a write that failed) in front of these.
    mutating func prepend(_ earlier: AppOutcomes) {
        updates = earlier.updates + updates
        pauseReason = pauseReason ?? earlier.pauseReason
        if let gate = earlier.gate { closeGate(until: gate.until, reason: gate.reason) }
    }

    private mutating func closeGate(until: Int64, reason: GateReason) {
        if until > gate?.until ?? 0 { gate = (until, reason) }
    }
}
