/// The gate of one fault domain — an app, or one push-service origin of a Web Push app (SPEC §11, §19) — with the
/// bookkeeping that makes one fault one step of its backoff, however many requests it fails.
struct Gate {
    /// No request before this time (Unix ms).
    var until: Int64 = 0
    /// When the gate last closed for a fault (here, or seen stored): only the failure of a request sent after this is
    /// a fault of its own.
    var faultAt = Int64.min
    /// Faults in a row, for the fallback gate's backoff; an answer below 500 that closes no gate resets it.
    var faults = 0
    /// Quota faults in a row, for their backoff; a 2xx resets it.
    var quotaFaults = 0

    /// A request sent at `sentAt` failed in a way that closes the gate: whether that is a fault of its own (it was
    /// sent after the gate last closed), counted if so. The failures of requests sent before belong to the fault
    /// that closed it.
    mutating func failed(sentAt: Int64, quota: Bool, now: Int64) -> Bool {
        guard sentAt > faultAt else { return false }
        faultAt = now
        faults += 1
        if quota { quotaFaults += 1 }
        return true
    }

    /// The gate as stored, closed here or by another instance on a shared queue. One closed elsewhere is a fault too:
    /// what was in flight when it was seen fails with it, not as a fault of its own.
    mutating func seen(until stored: Int64, now: Int64) {
        guard stored > until else { return }
        if stored > now { faultAt = max(faultAt, now) }
        until = stored
    }

    /// The gate after the current run of faults (of quota faults with `quota`): `base`, doubling per fault, at most
    /// `cap`.
    func backoff(base: Int64, cap: Int64, quota: Bool) -> Int64 {
        min(cap, base << Int64(min(max(0, (quota ? quotaFaults : faults) - 1), 20)))
    }
}
