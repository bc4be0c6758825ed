import Testing
@testable import Delivery

@Suite struct PendingQueueTests {
    @Test func takesElementsInTheOrderTheyCame() {
        var queue = PendingQueue<Int>()
        queue.append(contentsOf: [1, 2, 3])
        #expect(queue.popFirst() == 1)
        queue.append(contentsOf: [4])
        #expect(Array(queue.removeAll()) == [2, 3, 4])
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }

    /// The engine claims the next window while the last one is still being sent, so the queue is refilled before
    /// it ever runs empty: taken elements must not stay in memory until it does. (They did: a 200,000-message
    /// drain kept every request it had sent, bodies and all, ~300 MiB.)
    @Test func forgetsTakenElementsWhileNeverRunningEmpty() {
        var queue = PendingQueue<[UInt8]>()
        var next = 0
        var taken = 0
        for _ in 0..<200 {
            queue.append(contentsOf: (0..<1000).map { _ in next += 1; return [UInt8](repeating: 0, count: 8) })
            for _ in 0..<1000 where queue.count > 500 {
                _ = queue.popFirst()
                taken += 1
            }
            #expect(queue.storedCount <= 2 * queue.count + 1024)
        }
        #expect(taken == next - queue.count)
        #expect(queue.count == 500)
    }
}
