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

/// Threads that each own one resource (a read connection) and take jobs from one shared queue: the readers of
/// both engines.
public final class ReaderThreads<Resource>: Sendable {
    private let queue = JobQueue<@Sendable (Resource) -> Void>()
    private let finished: [Rendezvous<Void>]

    /// Starts a thread per resource, named `name` and its index; each resource is used by its thread only.
    public init(name: String, resources: [Resource]) {
        var finished: [Rendezvous<Void>] = []
        for (index, resource) in resources.enumerated() {
            let box = UncheckedBox(resource)
            let done = Rendezvous<Void>()
            let thread = Thread { [queue] in
                Thread.current.name = "\(name)\(index)"
                let resource = box.take()
                while let job = queue.popBatch(limit: 1).first { job(resource) }
                done.fulfil(.success(()))
            }
            thread.start()
            finished.append(done)
        }
        self.finished = finished
    }

    /// Queues `job` for the next free thread; false when closed (the job will never run).
    public func submit(_ job: @escaping @Sendable (Resource) -> Void) -> Bool { queue.push(job) }

    /// Lets queued jobs finish and stops the threads.
    public func close() {
        queue.close()
        for done in finished { try? done.wait() }
    }
}
