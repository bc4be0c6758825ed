import Queue
import Support
import Testing

@testable import Delivery

/// When outcomes are written, event by event, without a writer or a clock: what each event makes the engine do.
@Suite struct OutboxTests {
    let spacing = Outbox.spacingNanos
    let start: UInt64 = 5_000_000_000

    func delivered(_ id: Int64) -> DeliveryUpdate {
        .delivered(id: id, fcmMessageID: "sent-\(id)", canonicalToken: nil, status: 200)
    }

    /// An outbox whose first write, of delivery 1, started at `start` and is still with the writer.
    func writing() -> Outbox {
        var outbox = Outbox()
        _ = outbox.gathered([delivered(1)], plan: nil, app: "a")
        _ = outbox.timerFired(now: start)
        return outbox
    }

    @Test func theFirstOutcomesAreWrittenOnTheNextTurnWithEveryAnswerOfThisOne() {
        var outbox = Outbox()
        let first = outbox.gathered([delivered(1)], plan: nil, app: "a")
        #expect(first.wakes == [spacing], "no write yet: due at once, after this turn's answers")
        #expect(outbox.gathered([delivered(2)], plan: nil, app: "a").isEmpty, "the write asked for takes it too")
        #expect(outbox.gathered([delivered(3)], plan: nil, app: "b").isEmpty)
        let written = outbox.timerFired(now: start)
        #expect(written.writes.count == 1, "every app in one writer job")
        #expect(written.writes.first?.ids == ["a": [1, 2], "b": [3]])
        #expect(outbox.writing == 1 && outbox.isEmpty)
    }

    @Test func oneWriteAtATimeAndTheNextWaitsForItsAnswer() {
        var outbox = writing()
        #expect(outbox.gathered([delivered(2)], plan: nil, app: "a").isEmpty, "a write is with the writer")
        #expect(outbox.timerFired(now: start + spacing).writes.isEmpty, "a stale timer writes nothing beside it")
        #expect(outbox.gathered([delivered(3)], plan: nil, app: "b").isEmpty)
        let answered = outbox.written()
        #expect(answered.wakes == [start + spacing], "the next starts 20 ms after the last one started")
        #expect(outbox.timerFired(now: start + spacing).writes.first?.ids == ["a": [2], "b": [3]])
    }

    @Test func anAnsweredWriteWithNothingWaitingAsksForNothing() {
        var outbox = writing()
        #expect(outbox.written().isEmpty)
        #expect(outbox.writing == 0)
        #expect(outbox.gathered([delivered(2)], plan: nil, app: "a").wakes == [start + spacing])
    }

    @Test func aFlushWritesBesideAWriteUnderwayForAReadThatMustComeAfter() {
        var outbox = writing()
        _ = outbox.gathered([delivered(2)], plan: nil, app: "a")
        #expect(outbox.flush(now: start + 1).writes.first?.ids == ["a": [2]])
        #expect(outbox.writing == 2)
        #expect(outbox.flush(now: start + 2).isEmpty, "nothing waits")
    }

    @Test func aTransientFailureIsWrittenAgainASecondLaterInFrontOfWhatGatheredMeanwhile() {
        var outbox = writing()
        var failed = Outbox()
        _ = failed.gathered([delivered(1)], plan: OutcomePlan(pauseReason: "first"), app: "a")
        let outcomes = failed.timerFired(now: 0).writes[0]
        let retry = outbox.writeFailed(outcomes, now: start + 5)
        #expect(retry.wakes == [start + 5 + Outbox.retryPauseNanos])
        _ = outbox.gathered([delivered(2)], plan: OutcomePlan(pauseReason: "second"), app: "a")
        #expect(outbox.timerFired(now: start + 100).writes.isEmpty, "the failed write still counts until its retry")
        let again = outbox.timerFired(now: start + 5 + Outbox.retryPauseNanos)
        #expect(again.writes.first?.ids == ["a": [1, 2]], "the older outcomes first")
        #expect(again.writes.first?["a"]?.app.pauseReason == "second", "a pause gathered meanwhile keeps its reason")
        #expect(outbox.writing == 1)
    }

    @Test func theLatestGateIsTheOneWritten() {
        var outbox = Outbox()
        var later = OutcomePlan(gateUntil: 9_000)
        later.gateReason = .reset
        _ = outbox.gathered([], plan: OutcomePlan(gateUntil: 5_000), app: "a")
        _ = outbox.gathered([], plan: later, app: "a")
        _ = outbox.gathered([], plan: OutcomePlan(gateUntil: 7_000), app: "a")
        let gate = outbox.timerFired(now: start).writes.first?["a"]?.app.gate
        #expect(gate?.until == 9_000 && gate?.reason == .reset)
    }
}

extension [Outbox.Action] {
    var writes: [[String: AppOutcomes]] { compactMap { if case .write(let outcomes) = $0 { outcomes } else { nil } } }
    var wakes: [UInt64] { compactMap { if case .wake(let at) = $0 { at } else { nil } } }
}

extension [String: AppOutcomes] {
    var ids: [String: [Int64]] { mapValues { $0.updates.map(\.id) } }
}
