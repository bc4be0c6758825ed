/// HPACK's dynamic table (RFC 7541 section 2.3.2, 4): newest entry first, each entry counted as its name and value
/// lengths plus 32, the oldest evicted to stay within `maxSize`.
struct HPACKDynamicTable {
    /// Entries, oldest first: index 1 of the dynamic table is the last element.
    private(set) var entries: [(name: [UInt8], value: [UInt8])] = []
    /// Where the live entries start in `entries` (evicted ones are dropped in batches).
    private var first = 0
    private(set) var size = 0
    private(set) var maxSize: Int

    init(maxSize: Int) {
        self.maxSize = maxSize
    }

    var count: Int { entries.count - first }

    /// The entry at dynamic index `index` (1 = newest); nil beyond the table.
    func entry(_ index: Int) -> (name: [UInt8], value: [UInt8])? {
        guard index >= 1 && index <= count else { return nil }
        return entries[entries.count - index]
    }

    /// Adds an entry, evicting the oldest as needed. An entry larger than `maxSize` empties the table and is not
    /// added (section 4.4).
    mutating func add(name: [UInt8], value: [UInt8]) {
        let entrySize = name.count + value.count + 32
        evict(toFit: maxSize - entrySize)
        guard entrySize <= maxSize else { return }
        entries.append((name, value))
        size += entrySize
    }

    mutating func resize(to newMax: Int) {
        maxSize = newMax
        evict(toFit: newMax)
    }

    /// The most recent index holding `name` and `value`, and the most recent holding `name` (0: none).
    func find(name: [UInt8], value: [UInt8]) -> (nameIndex: Int, fullIndex: Int) {
        var nameIndex = 0
        for index in 1...max(1, count) where index <= count {
            let entry = entries[entries.count - index]
            guard entry.name == name else { continue }
            if nameIndex == 0 { nameIndex = index }
            if entry.value == value { return (nameIndex, index) }
        }
        return (nameIndex, 0)
    }

    private mutating func evict(toFit limit: Int) {
        while size > max(0, limit) && first < entries.count {
            size -= entries[first].name.count + entries[first].value.count + 32
            first += 1
        }
        if first == entries.count {
            entries.removeAll(keepingCapacity: true)
            first = 0
        } else if first >= 64 && first * 2 >= entries.count {
            entries.removeFirst(first)
            first = 0
        }
    }
}
