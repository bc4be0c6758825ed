import Foundation

/// A blocking FIFO handed from any thread to the threads that own database connections.
public final class JobQueue<Job>: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var closed = false

    public init() {}

    /// Jobs waiting to be taken.
    public var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count
    }

    /// Adds a job; false when the queue is closed (the job will never run).
    @discardableResult
    public func push(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Waits for work and takes up to `limit` jobs; an empty result means closed and drained.
    public func popBatch(limit: Int) -> [Job] {
        condition.lock()
        defer { condition.unlock() }
        while jobs.isEmpty && !closed { condition.wait() }
        let count = min(limit, jobs.count)
        let batch = Array(jobs.prefix(count))
        jobs.removeFirst(count)
        return batch
    }

    /// No new jobs are accepted; the ones queued still run.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A one-shot result that a thread waits for; used to make the asynchronous writer and readers synchronous
/// for callers that own their thread (the CLI, tests, start-up).
public final class Rendezvous<T>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<T, Error>?

    public init() {}

    public func fulfil(_ value: Result<T, Error>) {
        condition.lock()
        result = value
        condition.signal()
        condition.unlock()
    }

    public func wait() throws -> T {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return try result!.get()
    }
}

/// Moves a non-Sendable value into the one thread that will own it from then on.
public final class UncheckedBox<T>: @unchecked Sendable {
    private var value: T?
    public init(_ value: T) { self.value = value }
    public func take() -> T {
        defer { value = nil }
        return value!
    }
}
