/// A first-in first-out queue with a cheap take from the front and a put back there: the requests waiting for a
/// connection, in both pools.
struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: Element? { isEmpty ? nil : items[head] }

    mutating func append(_ element: Element) {
        items.append(element)
    }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }

    mutating func pushFront(_ element: Element) {
        if head > 0 {
            head -= 1
            items[head] = element
        } else {
            items.insert(element, at: 0)
        }
    }

    /// Takes out every element `predicate` holds for, keeping the others in order.
    mutating func removeAll(where predicate: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept: [Element] = []
        for element in items[head...] {
            if predicate(element) { removed.append(element) } else { kept.append(element) }
        }
        if !removed.isEmpty {
            items = kept
            head = 0
        }
        return removed
    }
}
