import Synchronization

/// A count bumped from any thread (a writer's completions, a job retried), read by the test.
public final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    public init() {}

    /// Adds one; returns the new count.
    @discardableResult
    public func increment() -> Int { value.add(1, ordering: .sequentiallyConsistent).newValue }

    public var count: Int { value.load(ordering: .sequentiallyConsistent) }
}
