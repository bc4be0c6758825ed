import Testing

import Queue

/// The texts the queue's types are stored as, which users script against (`herald status --json`, SPEC §4), read
/// back as the same values; and what each value decides.
@Suite struct StoredTextTests {
    @Test(arguments: [
        (GateReason.reset, "reset"), (.timeout, "timeout"), (.connect, "connect"), (.transport, "transport"),
        (.retryAfter, "retry_after"), (.quota, "quota"), (.http(503), "http_503"), (.http(500), "http_500"),
        (.other("goaway"), "goaway"),
    ])
    func aGateReasonIsStoredAsItsCodeAndReadsBack(_ reason: GateReason, _ stored: String) {
        #expect(reason.rawValue == stored)
        #expect(GateReason(stored: stored) == reason)
    }

    /// A code this version does not know is kept as written, so reading and writing it again changes nothing.
    @Test(arguments: ["http_", "http_5x3", "http_+503", "http_0503", "HTTP_503", "retry-after", ""])
    func aGateReasonThisVersionDoesNotKnowIsKeptVerbatim(_ stored: String) {
        #expect(GateReason(stored: stored) == .other(stored))
        #expect(GateReason(stored: stored).rawValue == stored)
    }

    @Test(arguments: [(Priority.normal, "normal", PriorityLane.normal), (.high, "high", .high)])
    func aPriorityIsStoredByNameAndPicksItsClaimLane(_ priority: Priority, _ stored: String, _ lane: PriorityLane) {
        #expect(priority.rawValue == stored && Priority(stored: stored) == priority)
        #expect(priority.lane == lane)
    }

    /// The claim takes the high lane first: its `priority_rank` sorts first.
    @Test func theHighLaneIsClaimedFirst() {
        #expect(PriorityLane.allCases == [.high, .normal])
        #expect(PriorityLane.high.rawValue < PriorityLane.normal.rawValue)
    }

    @Test(arguments: [
        (DeliveryState.queued, false), (.inflight, false), (.delivered, true), (.dead, true), (.dropped, true),
    ])
    func onlyDeliveredDeadAndDroppedEndADelivery(_ state: DeliveryState, _ terminal: Bool) {
        #expect(state.isTerminal == terminal)
        #expect(DeliveryState(stored: state.rawValue) == state)
    }

    @Test(arguments: [
        (MessageTarget.tokens(["a"]), TargetKind.tokens, false), (.users(["ann"]), .tokens, false),
        (.topic("/topics/news"), .topic, true), (.condition("'a' in topics"), .condition, true),
    ])
    func aTargetIsStoredAsItsKindAndTopicsAndConditionsGetTheSmallerLimit(
        _ target: MessageTarget, _ kind: TargetKind, _ topicOrCondition: Bool
    ) {
        #expect(target.kind == kind && TargetKind(stored: kind.rawValue) == kind)
        #expect(target.isTopicOrCondition == topicOrCondition)
    }

    @Test(arguments: [(TokenTombstone.Kind.deleted, "deleted"), (.replaced, "replaced")])
    func aTombstoneKindIsStoredByName(_ kind: TokenTombstone.Kind, _ stored: String) {
        #expect(kind.rawValue == stored && TokenTombstone.Kind(stored: stored) == kind)
    }
}
