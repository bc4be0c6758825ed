import Posix
import Support
import Synchronization

/// A sender pool's DNS (SPEC §19): `getaddrinfo` blocks, so lookups run on threads the resolver owns (never Swift's
/// cooperative pool), several names at once, one lookup per name however many connections wait for it, answers kept
/// for `answerSeconds` (`getaddrinfo` gives no TTL) and failures for `failureSeconds`. Each pool has its own: FCM,
/// APNs and HMS never wait behind a Web Push subscription's name, and one name that DNS never answers holds up only
/// the connections to it.
///
/// ```swift
/// let resolver = Resolver(name: "web")
/// let wait = resolver.resolve(host: "fcm.googleapis.com", port: 443) { result in
///     // on a resolver thread, or at once on the caller's (an address, or a cached answer): don't block
/// }
/// wait?.cancel()   // no longer needed: a lookup that nobody waits for any more is not started
/// ```
///
/// At most `maxThreads` lookups run at once; one that has run for `slowSeconds` no longer counts against that (a
/// name whose DNS does not answer), so further names get threads of their own, up to `maxSlowThreads` more.
final class Resolver: Sendable {
    typealias Answer = Result<[SocketAddress], SocketAddress.ResolveError>
    typealias LookUp = @Sendable (_ host: String, _ port: Int) -> Answer

    /// A caller waiting for a name: `cancel` gives the wait up (its completion is then never called).
    struct Wait: Sendable {
        fileprivate let resolver: Resolver
        fileprivate let key: Key
        fileprivate let id: Int

        func cancel() { resolver.cancel(self) }
    }

    static let answerSeconds = 60.0
    static let failureSeconds = 5.0
    static let slowSeconds = 1.0
    /// Names remembered at most; past it expired answers go, then the oldest.
    static let maxCached = 4_096

    fileprivate struct Key: Hashable {
        var host: String
        var port: Int
    }

    private struct Lookup {
        var waiters: [Int: @Sendable (Answer) -> Void] = [:]
        /// Monotonic seconds it started at; nil while it waits for a thread.
        var startedAt: Double?
    }

    private struct State {
        var cache: [Key: (until: Double, answer: Answer)] = [:]
        var lookups: [Key: Lookup] = [:]
        /// Lookups not started, oldest first.
        var queue: [Key] = []
        var threads = 0
        var nextWaiter = 0
    }

    private let name: String
    private let maxThreads: Int
    private let maxSlowThreads: Int
    private let lookUp: LookUp
    private let state = Mutex(State())

    /// - Parameter lookUp: the blocking lookup (`getaddrinfo`); tests give one of their own.
    init(
        name: String, maxThreads: Int = 8, maxSlowThreads: Int = 24,
        lookUp: @escaping LookUp = { host, port in
            Result { () throws(SocketAddress.ResolveError) in
                try SocketAddress.lookUp(host: host, port: port, numericOnly: false)
            }
        }
    ) {
        self.name = name
        self.maxThreads = maxThreads
        self.maxSlowThreads = maxSlowThreads
        self.lookUp = lookUp
    }

    /// Calls `completion` once with `host`'s TCP addresses, in the resolver's order of preference: at once, on the
    /// caller's thread, for an IP address (its own answer) or a cached answer (nil returned then); otherwise later,
    /// on a resolver thread.
    func resolve(host: String, port: Int, completion: @escaping @Sendable (Answer) -> Void) -> Wait? {
        if let numeric = try? SocketAddress.lookUp(host: host, port: port, numericOnly: true) {
            completion(.success(numeric))
            return nil
        }
        let key = Key(host: host, port: port)
        let now = Clock.monotonicSeconds()
        let (cached, wait, startThread) = state.withLock { state -> (Answer?, Wait?, Bool) in
            if let entry = state.cache[key], entry.until > now { return (entry.answer, nil, false) }
            state.nextWaiter += 1
            let id = state.nextWaiter
            if state.lookups[key] == nil { state.queue.append(key) }
            state.lookups[key, default: Lookup()].waiters[id] = completion
            return (nil, Wait(resolver: self, key: key, id: id), claimThread(&state, now: now))
        }
        if let cached { completion(cached) }
        if startThread { PosixThread(name: "herald-dns-\(name)") { [self] in work() }.detach() }
        return wait
    }

    /// Whether a new thread should take the queue's next lookup (and counts it if so): the queue has one, and fewer
    /// than `maxThreads` threads are busy with lookups that are not yet slow.
    private func claimThread(_ state: inout State, now: Double) -> Bool {
        guard !state.queue.isEmpty, state.threads < maxThreads + maxSlowThreads else { return false }
        if state.threads >= maxThreads {
            let slow = state.lookups.values.count { $0.startedAt.map { now - $0 >= Self.slowSeconds } ?? false }
            guard state.threads - min(slow, maxSlowThreads) < maxThreads else { return false }
        }
        state.threads += 1
        return true
    }

    private func cancel(_ wait: Wait) {
        state.withLock { state in
            guard var lookup = state.lookups[wait.key] else { return }
            lookup.waiters[wait.id] = nil
            if lookup.waiters.isEmpty && lookup.startedAt == nil {
                state.lookups[wait.key] = nil
                state.queue.removeAll { $0 == wait.key }
            } else {
                state.lookups[wait.key] = lookup
            }
        }
    }

    /// A resolver thread: lookups from the queue until it is empty.
    private func work() {
        while let key = next() {
            let answer = lookUp(key.host, key.port)
            let waiters = state.withLock { state in
                let now = Clock.monotonicSeconds()
                if state.cache.count >= Self.maxCached { Self.trim(&state.cache, now: now) }
                let seconds = if case .success = answer { Self.answerSeconds } else { Self.failureSeconds }
                state.cache[key] = (now + seconds, answer)
                return state.lookups.removeValue(forKey: key)?.waiters.values.map { $0 } ?? []
            }
            for waiter in waiters { waiter(answer) }
        }
    }

    /// The queue's oldest lookup, marked started; nil (and the thread no longer counted) when there is none.
    private func next() -> Key? {
        state.withLock { state in
            guard !state.queue.isEmpty else {
                state.threads -= 1
                return nil
            }
            let key = state.queue.removeFirst()
            state.lookups[key]?.startedAt = Clock.monotonicSeconds()
            return key
        }
    }

    private static func trim(_ cache: inout [Key: (until: Double, answer: Answer)], now: Double) {
        cache = cache.filter { $0.value.until > now }
        while cache.count >= maxCached, let oldest = cache.min(by: { $0.value.until < $1.value.until })?.key {
            cache[oldest] = nil
        }
    }
}
