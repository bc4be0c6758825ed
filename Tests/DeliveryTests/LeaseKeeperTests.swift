import Testing

@testable import Delivery

/// The leases held, their renewal and the rescuer's guard, event by event, without a database or a clock.
@Suite struct LeaseKeeperTests {
    let now: Int64 = 1_700_000_000_000

    /// The actions of `ticks` ticks a second apart, from `from`.
    func tick(_ leases: inout LeaseKeeper, _ ticks: Int, from: Int64) -> [(tick: Int, ids: [Int64], rescue: Bool)] {
        (1...ticks).flatMap { tick in
            leases.ticked(now: from + Int64(tick) * 1_000).map { action in
                guard case .renew(let ids, let rescue) = action else { preconditionFailure() }
                return (tick, ids.sorted(), rescue)
            }
        }
    }

    @Test func heldLeasesAreRenewedFourTimesPerLease() {
        var leases = LeaseKeeper(leaseMillis: 120_000, tickMillis: 1_000)
        leases.claimed([1, 2, 3])
        let renewals = tick(&leases, 120, from: now)
        #expect(renewals.map(\.tick) == [30, 60, 90, 120])
        #expect(renewals.allSatisfy { $0.ids == [1, 2, 3] })
    }

    @Test func aLeaseIsHeldFromItsClaimUntilItsOutcomeIsWritten() {
        var leases = LeaseKeeper(leaseMillis: 4_000, tickMillis: 1_000)
        leases.claimed([1, 2])
        leases.claimed([3])
        leases.released([2])
        #expect(tick(&leases, 1, from: now).map(\.ids) == [[1, 3]])
        leases.released([1, 3])
        #expect(tick(&leases, 1, from: now).map(\.ids) == [[]], "renewing nothing still rescues")
    }

    @Test func aLeaseShorterThanFourTicksIsRenewedEveryTick() {
        var leases = LeaseKeeper(leaseMillis: 2_000, tickMillis: 1_000)
        #expect(tick(&leases, 3, from: now).map(\.tick) == [1, 2, 3])
    }

    @Test func theRescuerWaitsHalfALeaseAfterTheLastFailedWrite() {
        var leases = LeaseKeeper(leaseMillis: 4_000, tickMillis: 1_000)
        #expect(tick(&leases, 1, from: now).map(\.rescue) == [true], "a healthy writer: rescue")
        leases.writeFailed(now: now)
        #expect(tick(&leases, 3, from: now).map(\.rescue) == [false, true, true], "not before 2 s have passed")
        leases.writeFailed(now: now + 10_000)
        #expect(tick(&leases, 1, from: now + 10_000).map(\.rescue) == [false])
    }
}
