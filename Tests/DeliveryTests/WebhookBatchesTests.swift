import Queue
import Support
import Testing

@testable import Delivery

private let t0: Int64 = 1_700_000_000_000

/// The outcome webhook's batching and cursor decisions (`WebhookBatches`), event by event.
@Suite struct WebhookBatchesTests {
    static func outcomes(_ seqs: ClosedRange<Int64>, at: Int64 = t0, state: DeliveryState = .delivered)
        -> [OutcomeRecord]
    {
        seqs.map {
            OutcomeRecord(
                seq: $0, at: at, messageID: "m\($0)", app: "default", token: "t\($0)", user: nil, state: state,
                reason: nil, providerMessageID: nil)
        }
    }

    let all: (OutcomeRecord) -> Bool = { _ in true }

    @Test func aFullPageIsABatchAtOnceAndAShortOneOnlyAfterASecond() {
        var batches = WebhookBatches(acknowledged: 0)
        let fullPageFormed = batches.form(page: Self.outcomes(1...100), carries: all, now: t0)
        #expect(fullPageFormed)
        #expect(batches.inFlight == [100])
        let shortPageFormedEarly = batches.form(page: Self.outcomes(101...150), carries: all, now: t0 + 999)
        #expect(!shortPageFormedEarly)
        let shortPageFormedAfterASecond = batches.form(page: Self.outcomes(101...150), carries: all, now: t0 + 1_000)
        #expect(shortPageFormedAfterASecond)
        #expect(batches.inFlight == [100, 150])
        let emptyPageFormed = batches.form(page: [], carries: all, now: t0 + 5_000)
        #expect(!emptyPageFormed)
    }

    @Test func theCursorPassesABatchOnlyWhenItAndEveryBatchBeforeItAreAcknowledged() {
        var batches = WebhookBatches(acknowledged: 0)
        _ = batches.form(page: Self.outcomes(1...100), carries: all, now: t0)
        _ = batches.form(page: Self.outcomes(101...200), carries: all, now: t0)
        let due = batches.takeDue(now: t0)
        #expect(due.map(\.through) == [100, 200])
        let movedPastAnUnacknowledgedBatch = batches.succeeded(through: 200)
        #expect(!movedPastAnUnacknowledgedBatch)
        #expect(batches.acknowledged == 0 && batches.inFlight == [100, 200])
        let movedPastBoth = batches.succeeded(through: 100)
        #expect(movedPastBoth)
        #expect(batches.acknowledged == 200 && batches.inFlight.isEmpty)
    }

    @Test func aFailedBatchWaitsItsBackoffOrRetryAfterAndKeepsItsIDAndBody() {
        var random = SplitMix64(seed: 7)
        var batches = WebhookBatches(acknowledged: 0)
        _ = batches.form(page: Self.outcomes(1...100), carries: all, now: t0)
        let first = batches.takeDue(now: t0)
        batches.failed(through: 100, retryAfterUntil: nil, now: t0, using: &random)
        let early = batches.takeDue(now: t0 + 499)
        #expect(early.isEmpty)
        let due = try! #require(batches.nextDue)
        #expect((t0 + 500...t0 + 1_000).contains(due))
        let again = batches.takeDue(now: due)
        #expect(again.map { $0.id(webhook: "default") } == first.map { $0.id(webhook: "default") })
        #expect(again.map(\.body) == first.map(\.body))
        batches.failed(through: 100, retryAfterUntil: due + 60_000, now: due, using: &random)
        #expect(try! #require(batches.nextDue) >= due + 60_000)
    }

    @Test func outcomesTheWebhookDoesNotCarryArePassedWithoutARequest() {
        var batches = WebhookBatches(acknowledged: 0)
        let formed = batches.form(page: Self.outcomes(1...100, state: .dropped), carries: { $0.state == .dead }, now: t0)
        #expect(formed)
        let sent = batches.takeDue(now: t0)
        #expect(batches.acknowledged == 100 && sent.isEmpty)
    }

    @Test func batchesPastRetentionAreSkippedAndCounted() {
        var random = SplitMix64(seed: 1)
        var batches = WebhookBatches(acknowledged: 0)
        _ = batches.form(page: Self.outcomes(1...100), carries: all, now: t0)
        _ = batches.takeDue(now: t0)
        batches.failed(through: 100, retryAfterUntil: nil, now: t0, using: &random)
        let kept = batches.skip(before: t0)
        let skipped = batches.skip(before: t0 + 1)
        #expect(kept == 0 && skipped == 100)
        #expect(batches.acknowledged == 100)
    }

    @Test func aRestoredBatchIsTheSameRequestAsBeforeTheRestart() {
        var before = WebhookBatches(acknowledged: 10)
        _ = before.form(page: Self.outcomes(11...40), carries: all, now: t0 + 2_000)
        var after = WebhookBatches(acknowledged: 10)
        // More outcomes were committed meanwhile: the restored range still ends where it did.
        after.restore(through: 40, page: Self.outcomes(11...110), carries: all, now: t0 + 9_000)
        let (old, new) = (before.takeDue(now: t0 + 9_000), after.takeDue(now: t0 + 9_000))
        #expect(new.map { $0.id(webhook: "*") } == old.map { $0.id(webhook: "*") })
        #expect(new.map(\.body) == old.map(\.body))
        #expect(new.first?.id(webhook: "*") == "outcomes-all-10-40")
    }
}
