/// A first-in, first-out queue of claimed requests waiting for a slot: `append` at the back, `popFirst` at the
/// front, both O(1) amortized.
///
/// ```swift
/// var pending = PendingQueue<PreparedRequest>()
/// pending.append(contentsOf: requests)
/// while let request = pending.popFirst() { send(request) }
/// ```
struct PendingQueue<Element> {
    private var storage: [Element] = []
    /// `storage[head...]` is the queue; what lies before it was taken and is dropped at the next compaction.
    private var head = 0
    /// Taken elements are dropped once there are this many and at least as many as remain.
    private static var compactionThreshold: Int { 1024 }

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: Element? { isEmpty ? nil : storage[head] }

    /// Elements the storage still holds, taken ones included: what the queue costs in memory.
    var storedCount: Int { storage.count }

    mutating func append(contentsOf elements: [Element]) {
        storage += elements
    }

    /// The oldest element.
    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= Self.compactionThreshold && head >= storage.count - head {
            // The engine refills the queue before it runs empty, so the branch above may never come: without
            // this, every request sent in a drain stays here, body and all. Moving the rest costs no more than
            // the pops that came before it.
            storage.removeSubrange(0..<head)
            head = 0
        }
        return element
    }

    /// Takes every element, oldest first.
    mutating func removeAll() -> ArraySlice<Element> {
        let rest = storage[head...]
        storage.removeAll(keepingCapacity: true)
        head = 0
        return rest
    }
}
