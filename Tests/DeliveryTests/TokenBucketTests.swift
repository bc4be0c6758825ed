import Testing
@testable import Delivery

@Suite struct TokenBucketTests {
    private func take(_ bucket: inout TokenBucket, _ now: Int64) -> Bool { bucket.take(now: now) }

    /// Takes a token whenever one is there, every millisecond for `seconds`; returns the times of the takes.
    private func greedy(rate: Double, seconds: Int) -> [Int64] {
        var bucket = TokenBucket(ratePerSecond: rate)
        var taken: [Int64] = []
        for now in Int64(0)..<Int64(seconds * 1000) {
            while bucket.take(now: now) { taken.append(now) }
        }
        return taken
    }

    /// The most takes in any window of `millis` starting at a take.
    private func busiestWindow(_ taken: [Int64], millis: Int64) -> Int {
        var most = 0
        var end = 0
        for start in taken.indices {
            while end < taken.count && taken[end] < taken[start] + millis { end += 1 }
            most = max(most, end - start)
        }
        return most
    }

    @Test(arguments: [1.0, 20.0, 500.0, 10_000.0])
    func noWindowCarriesMoreThanTheRateAndABurst(rate: Double) {
        let taken = greedy(rate: rate, seconds: 10)
        let burst = TokenBucket(ratePerSecond: rate).burst
        for millis: Int64 in [100, 1_000, 5_000] {
            let limit = burst + rate * Double(millis) / 1000
            #expect(Double(busiestWindow(taken, millis: millis)) <= limit, "rate \(rate), window \(millis) ms")
        }
        // And it does send at the rate, not below it.
        #expect(Double(taken.count) >= rate * 10 - 1)
        #expect(Double(taken.count) <= rate * 10 + burst)
    }

    @Test func theNextTokenIsDueWhenTheRateSays() {
        var bucket = TokenBucket(ratePerSecond: 4)  // burst 1
        #expect(take(&bucket, 1_000))
        #expect(!take(&bucket, 1_000))
        let next = bucket.nextTokenAt(now: 1_000)
        #expect(next == 1_250)
        #expect(!take(&bucket, 1_249))
        #expect(take(&bucket, 1_250))
    }

    @Test func anIdleBucketSavesNoMoreThanItsBurst() {
        var bucket = TokenBucket(ratePerSecond: 100)  // burst 5
        var taken = 0
        while bucket.take(now: 3_600_000) { taken += 1 }
        #expect(taken == 5)
    }

    @Test func aClockThatGoesBackGivesNothingExtra() {
        var bucket = TokenBucket(ratePerSecond: 2)
        #expect(take(&bucket, 10_000))
        #expect(!take(&bucket, 9_000))
        #expect(!take(&bucket, 10_000))
        #expect(take(&bucket, 10_500))
    }
}
