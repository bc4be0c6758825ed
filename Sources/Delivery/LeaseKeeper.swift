/// The leases this process holds, and when they are renewed and expired ones rescued, as a state machine in
/// `AppScheduler`'s manner: events in, actions out, no I/O, no clock (`now` is given, Unix milliseconds), no lock.
///
/// A delivery is held from its claim until its outcome is committed (or its write failed for good): waiting for a
/// slot, in flight, or in the outbox. Held leases are renewed four times per lease, and nothing else's is. The
/// rescuer, run in the same job after the renewal so it never takes back a row this process still holds, takes
/// back leases nobody renews (a process that died). After a database outage every lease looks expired, other
/// instances' too: the rescuer waits half a lease after the last failed write, so that every instance cut off with
/// this one has renewed what it still holds before anything is taken.
///
/// ```swift
/// var leases = LeaseKeeper(leaseMillis: 120_000, tickMillis: 1_000)
/// leases.claimed(claim.deliveries.map(\.id))
/// for case .renew(let ids, let rescue) in leases.ticked(now: Clock.nowMillis()) { … }
/// ```
struct LeaseKeeper {
    enum Action: Equatable {
        /// Renew the leases of `ids`; then, when `rescue`, take back expired leases nobody renewed.
        case renew(ids: [Int64], rescue: Bool)
    }

    let leaseMillis: Int64
    /// Ticks between renewals: a quarter of a lease's worth.
    private let ticksPerRenewal: Int
    private var ticks = 0
    private(set) var held = Set<Int64>()
    /// When a write last failed (the database away, the disk full).
    private var lastWriteFailure: Int64 = 0

    /// `tickMillis`: how often `ticked` is called.
    init(leaseMillis: Int64, tickMillis: Int) {
        self.leaseMillis = leaseMillis
        ticksPerRenewal = max(1, Int(leaseMillis / 4) / tickMillis)
    }

    // MARK: - Events

    /// These deliveries were leased to this process.
    mutating func claimed(_ ids: some Sequence<Int64>) {
        held.formUnion(ids)
    }

    /// The outcomes of these deliveries were written (or failed for good): their leases are no longer this
    /// process's to renew.
    mutating func released(_ ids: some Sequence<Int64>) {
        held.subtract(ids)
    }

    /// A write failed (a claim, an outcome write, a renewal, a read through the writer).
    mutating func writeFailed(now: Int64) {
        lastWriteFailure = now
    }

    /// The engine's tick: every quarter lease, the held leases are renewed, and expired ones rescued once the
    /// writer has been healthy for half a lease.
    mutating func ticked(now: Int64) -> [Action] {
        ticks += 1
        guard ticks % ticksPerRenewal == 0 else { return [] }
        return [.renew(ids: Array(held), rescue: now - lastWriteFailure >= leaseMillis / 2)]
    }
}
