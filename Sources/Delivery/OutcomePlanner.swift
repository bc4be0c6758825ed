import Classify
import Queue

/// What one answer does to the queue: one update per delivery of the request, and maybe a switch of its fault
/// domain: the app, or with `origin` that push-service origin of a Web Push app (SPEC §19).
public struct OutcomePlan: Sendable, Equatable {
    public var updates: [DeliveryUpdate] = []
    /// The origin whose switches `pauseReason` and `gateUntil` are; nil: the app's.
    public var origin: String?
    /// Set when the whole sender is refused (401, InvalidApnsCredential): the app is paused with this reason. With
    /// `origin`: that origin refused the sender for several subscriptions in a row (the scheduler's to decide).
    public var pauseReason: String?
    /// Set when the gate closes (a 5xx, a timeout, or any Retry-After): no request before then.
    public var gateUntil: Int64?
    /// Why the gate closes, when it does. The scheduler names it: the transport's reason for a failure is not the
    /// planner's to read.
    public var gateReason: GateReason?
}

/// Turns a classification into row updates. Pure: the same inputs and random source give the same plan.
public enum OutcomePlanner {
    /// - Parameters:
    ///   - status: the HTTP status answered, nil for a transport failure.
    ///   - fallbackGateMillis: how long a 5xx or transport failure without `Retry-After` closes the gate.
    public static func plan(
        _ classification: Classification, for request: PreparedRequest, status: Int?, policy: RetryPolicy,
        fallbackGateMillis: Int64, now: Int64, using random: inout some RandomNumberGenerator
    ) -> OutcomePlan {
        var plan = OutcomePlan(origin: request.origin)
        plan.updates.reserveCapacity(request.deliveries.count)
        if classification.closesGate {
            plan.gateUntil = max(classification.retryAfterUntil ?? 0, now + fallbackGateMillis)
        }
        // By index, and the message's fields only where a retry needs them: a copy of a delivery or of the message
        // is a retain and a release of each of its strings, for every answer.
        for index in 0..<min(request.deliveries.count, classification.outcomes.count) {
            let delivery = (id: request.deliveries[index].id, attempts: request.deliveries[index].attempts)
            let outcome = classification.outcomes[index]
            switch outcome {
            case .delivered(let fcmMessageID, let canonicalToken):
                plan.updates.append(.delivered(
                    id: delivery.id, fcmMessageID: fcmMessageID, canonicalToken: canonicalToken, status: status))
            case .notRegistered:
                plan.updates.append(.dropped(id: delivery.id, reason: .notRegistered, status: status))
            case .unregistered(let reason, let since):
                plan.updates.append(
                    .forgetToken(id: delivery.id, state: .dropped, reason: reason, status: status, since: since))
            case .invalidToken(let reason):
                plan.updates.append(
                    .forgetToken(id: delivery.id, state: .dead, reason: reason, status: status, since: nil))
            case .deadToken(let reason):
                plan.updates.append(.dead(id: delivery.id, reason: reason, status: status))
            case .deadMessage(let reason):
                plan.updates.append(.deadMessage(id: delivery.id, reason: reason, status: status))
            case .retry(let reason), .retrySlow(let reason):
                let slow = if case .retrySlow = outcome { true } else { false }
                let decision = policy.next(
                    attempts: delivery.attempts + 1, slow: slow, retryAfterUntil: classification.retryAfterUntil,
                    ttlSeconds: request.message.ttlSeconds, expiresAt: request.message.expiresAt, now: now,
                    using: &random)
                switch decision {
                case .retry(let at):
                    plan.updates.append(.retry(id: delivery.id, at: at, reason: reason, status: status))
                case .dead(let deadReason):
                    plan.updates.append(.dead(id: delivery.id, reason: deadReason, status: status))
                }
            case .pauseApp(let reason):
                plan.updates.append(.release(id: delivery.id))
                plan.pauseReason = plan.pauseReason ?? reason.rawValue
            case .requeue:
                plan.updates.append(.release(id: delivery.id))
            case .senderRefused(let reason):
                // Uncharged: the origin refused the sender, not this delivery. Back when the gate it closes opens.
                plan.updates.append(
                    .deferred(id: delivery.id, until: plan.gateUntil ?? now, reason: reason, status: status))
            }
        }
        // A reply with fewer outcomes than deliveries is a classifier bug; never leave a lease dangling.
        for delivery in request.deliveries.dropFirst(classification.outcomes.count) {
            plan.updates.append(.release(id: delivery.id))
        }
        return plan
    }
}
