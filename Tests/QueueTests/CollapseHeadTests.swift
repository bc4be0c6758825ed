import Testing

@testable import Queue

private let t0: Int64 = 1_700_000_000_000

/// Whether a newer message with the same `collapse_key` supersedes an older one to the same target: only when it
/// will really reach the device (the claim drops the older one as `Collapsed`, `QueueStore+Claim.swift`).
@Suite struct CollapseHeadTests {
    @Test(arguments: [
        // (head's state, head's expiry, supersedes the older message)
        (DeliveryState.delivered as DeliveryState?, nil as Int64?, true),
        (nil, nil, true),  // its row was pruned: only delivered rows are, so it reached the device
        (.queued, t0 + 1, true),
        (.inflight, t0 + 1, true),
        (.queued, t0, false),  // expired as of now: it will never be sent
        (.inflight, t0 - 1, false),
        (.queued, nil, false),
        (.dead, t0 + 1, false),
        (.dropped, t0 + 1, false),
    ])
    func aNewerHeadSupersedesOnlyWhenItWillReachTheDevice(
        _ state: DeliveryState?, _ expiresAt: Int64?, _ supersedes: Bool
    ) {
        let head = CollapseHead(messageID: "m2", state: state, expiresAt: expiresAt)
        #expect(head.supersedes("m1", now: t0) == supersedes)
    }

    @Test(arguments: ["m2", "m3"])
    func aHeadNeverSupersedesItselfOrANewerMessage(_ messageID: String) {
        let head = CollapseHead(messageID: "m2", state: .delivered, expiresAt: nil)
        #expect(!head.supersedes(messageID, now: t0))
    }
}
