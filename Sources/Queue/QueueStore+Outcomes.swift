import Support

/// What an answer does, the same on every engine: the row's new state, and what it means for the token registry.
extension QueueStore {
    /// Writes the outcome of each leased delivery, and what it means for the token registry, in the caller's
    /// transaction. A row is only touched while it is still `inflight` under `owner`'s unexpired lease, so a late or
    /// repeated answer can never overwrite a row that was rescued or finished meanwhile, and applying the same
    /// outcomes twice changes nothing the second time (no duplicate events, no resurrected tokens).
    @discardableResult
    public func apply(
        _ updates: [DeliveryUpdate], owner: String, now: Int64, chargeAttempt: Bool = true
    ) throws -> AppliedOutcomes {
        let charge: Int64 = chargeAttempt ? 1 : 0
        let lease = HeldLease(owner: owner, now: now)
        var applied = AppliedOutcomes()
        // The common answer, a plain success, is written for the whole batch at once.
        var delivered: [(id: Int64, fcmMessageID: String?, status: Int?)] = []
        for update in updates {
            let row: LeasedRow?
            switch update {
            case .delivered(let id, let fcmMessageID, nil, let status):
                delivered.append((id, fcmMessageID, status))
                continue
            case .delivered(let id, let fcmMessageID, let canonicalToken?, let status):
                row = try markDelivered(
                    id, fcmMessageID: fcmMessageID, canonicalToken: canonicalToken, status: status, charge: charge,
                    lease: lease)
                if let row, canonicalToken != row.token,
                   try replaceToken(row.token, with: canonicalToken, app: row.app, messageID: row.messageID, now: now) {
                    applied.tokensReplaced += 1
                }
            case .dropped, .dead, .deadMessage, .expired, .forgetToken:
                let (state, reason, status, charges) = update.ending
                row = try markEnded(
                    update.id, state: state, reason: reason, status: status, charge: charges ? charge : 0, lease: lease)
                guard let row else { break }
                if state == .dead { applied.deadLetters += 1 }
                if case .dropped(_, .notRegistered, _) = update,
                   try forgetToken(row.token, app: row.app, messageID: row.messageID, now: now) {
                    applied.tokensDeleted += 1
                }
                if case .forgetToken(_, _, let reason, _, let since) = update,
                   try forgetToken(
                       row.token, app: row.app, messageID: row.messageID, reason: reason, unchangedSince: since,
                       now: now) {
                    applied.tokensDeleted += 1
                }
                // A message another app's provider refused may still reach this app's devices (a `users` fan-out).
                if case .deadMessage(_, let reason, _) = update {
                    applied.deadLetters += try endQueuedDeliveries(
                        of: row.messageID, app: row.app, state: .dead, reason: reason, now: now)
                }
            case .retry(let id, let at, let reason, let status):
                row = try markRetry(id, at: at, reason: reason, status: status, charge: charge, lease: lease)
            case .release(let id):
                row = try markReleased(id, lease: lease)
            case .deferred(let id, let until, let reason, let status):
                row = try markDeferred(id, until: until, reason: reason, status: status, lease: lease)
            }
            if row != nil { applied.updated.append(update.id) }
        }
        if !delivered.isEmpty {
            applied.updated += try markDelivered(delivered, charge: charge, lease: lease)
        }
        return applied
    }

    /// The provider said the token is dead: remove it from the registry and record a `deleted` event. Other queued
    /// deliveries to it are dropped when claimed (`reconcileClaimed`), so it is never sent to again. With
    /// `unchangedSince` (APNs' timestamp) a token registered again after that time stays, and nothing is recorded.
    /// Returns whether an event was written.
    func forgetToken(
        _ token: String, app: String, messageID: String, reason: DeliveryReason = .notRegistered,
        unchangedSince: Int64? = nil, now: Int64
    ) throws -> Bool {
        let registered = try unregister(token, app: app, unchangedSince: unchangedSince)
        if !registered, unchangedSince != nil, try registeredApp(of: token) == app { return false }
        // A token the registry never held is still reported once, for backends that keep their own tables.
        guard try registered || tombstone(app: app, token: token)?.kind != .deleted else { return false }
        try record(
            TokenEvent(app: app, token: token, tombstone: TokenTombstone(kind: .deleted, replacement: nil),
                       reason: reason, messageID: messageID), now: now)
        return true
    }

    /// FCM named a canonical token: the registry row moves to it keeping its user (or merges into the row the new
    /// token already has) and a `replaced` event records old → new. Queued deliveries to the old token are
    /// retargeted when claimed (`reconcileClaimed`). Returns whether an event was written.
    func replaceToken(_ old: String, with new: String, app: String, messageID: String, now: Int64) throws -> Bool {
        var registryChanged = false
        if try registeredApp(of: old) == app {
            registryChanged = try registeredApp(of: new) != nil
                ? deleteRegistration(old)
                : renameRegistration(old, to: new, now: now)
        }
        let replaced = TokenTombstone(kind: .replaced, replacement: new)
        guard try registryChanged || tombstone(app: app, token: old) != replaced else { return false }
        try record(
            TokenEvent(app: app, token: old, tombstone: replaced, reason: .canonicalID, messageID: messageID),
            now: now)
        return true
    }
}
