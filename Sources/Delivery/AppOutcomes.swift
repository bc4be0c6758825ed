import Queue

/// One app's outcomes waiting in the outbox: the row updates, and the switches they bring (a pause, a gate) to the
/// app or to its push-service origins, written together in the next outcome write.
struct AppOutcomes {
    /// A fault domain's switches: the first pause decided (the reason its row keeps), and the latest gate closing
    /// decided with its reason (the one its row keeps).
    struct Switches {
        var pauseReason: String?
        var gate: (until: Int64, reason: GateReason)?

        mutating func add(pauseReason reason: String?, gate closing: (until: Int64, reason: GateReason)?) {
            pauseReason = pauseReason ?? reason
            if let closing, closing.until > gate?.until ?? 0 { gate = closing }
        }
    }

    var updates: [DeliveryUpdate] = []
    /// The app's.
    var app = Switches()
    /// Each origin's, by origin.
    var origins: [String: Switches] = [:]

    mutating func add(_ more: [DeliveryUpdate], plan: OutcomePlan?) {
        updates += more
        guard let plan, plan.pauseReason != nil || plan.gateUntil != nil else { return }
        let gate = plan.gateUntil.map { (until: $0, reason: plan.gateReason ?? .transport) }
        if let origin = plan.origin {
            origins[origin, default: Switches()].add(pauseReason: plan.pauseReason, gate: gate)
        } else {
            app.add(pauseReason: plan.pauseReason, gate: gate)
        }
    }

    /// Puts outcomes decided earlier (a write that failed) in front of these.
    mutating func prepend(_ earlier: AppOutcomes) {
        updates = earlier.updates + updates
        app.add(pauseReason: earlier.app.pauseReason, gate: earlier.app.gate)
        for (origin, switches) in earlier.origins {
            origins[origin, default: Switches()].add(pauseReason: switches.pauseReason, gate: switches.gate)
        }
    }
}
