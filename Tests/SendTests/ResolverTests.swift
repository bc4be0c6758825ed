import Dispatch
import Posix
import Synchronization
import Testing

@testable import Send

/// A pool's resolver (SPEC §19): names are looked up concurrently, once however many wait, and one that never
/// answers holds up only the waits for it.
@Suite struct ResolverTests {
    /// A lookup function whose `hanging` names block until `release`, counting calls per name.
    final class FakeDNS: Sendable {
        let calls = Mutex<[String: Int]>([:])
        let hanging: Set<String>
        private let gate = DispatchSemaphore(value: 0)

        init(hanging: Set<String> = []) { self.hanging = hanging }

        func lookUp(_ host: String, _ port: Int) -> Resolver.Answer {
            calls.withLock { $0[host, default: 0] += 1 }
            if hanging.contains(host) { gate.wait() }
            return Result { () throws(SocketAddress.ResolveError) in
                try SocketAddress.lookUp(host: "192.0.2.7", port: port, numericOnly: true)
            }
        }

        func release(_ count: Int) { for _ in 0..<count { gate.signal() } }
        func count(_ host: String) -> Int { calls.withLock { $0[host] ?? 0 } }
    }

    private func resolve(_ resolver: Resolver, _ host: String) async -> Resolver.Answer {
        await withCheckedContinuation { continuation in
            _ = resolver.resolve(host: host, port: 443) { continuation.resume(returning: $0) }
        }
    }

    @Test func aNameThatNeverAnswersDoesNotHoldUpAnother() async throws {
        let dns = FakeDNS(hanging: ["slow.example"])
        let resolver = Resolver(name: "test", maxThreads: 2, lookUp: dns.lookUp)
        let waits = (0..<3).map { _ in resolver.resolve(host: "slow.example", port: 443) { _ in } }

        let answer = await resolve(resolver, "fast.example")

        #expect(try answer.get().count == 1)
        #expect(waits.allSatisfy { $0 != nil })
        #expect(dns.count("slow.example") == 1, "three waits, one lookup")
        dns.release(1)
    }

    @Test func waitsForOneNameShareOneLookupAndItsAnswerIsKept() async throws {
        let dns = FakeDNS(hanging: ["push.example"])
        let resolver = Resolver(name: "test", lookUp: dns.lookUp)
        async let first = resolve(resolver, "push.example")
        while dns.count("push.example") == 0 { await Task.yield() }
        async let second = resolve(resolver, "push.example")
        dns.release(1)
        let answers = await [first, second]

        #expect(answers.allSatisfy { (try? $0.get().count) == 1 })
        #expect(dns.count("push.example") == 1)
        let cached = Mutex<Resolver.Answer?>(nil)
        let wait = resolver.resolve(host: "push.example", port: 443) { answer in cached.withLock { $0 = answer } }
        #expect(wait == nil && cached.withLock { $0 } != nil, "answered at once from the cache")
        #expect(dns.count("push.example") == 1)
        #expect(resolver.resolve(host: "127.0.0.1", port: 443) { _ in } == nil, "an address is its own answer")
    }

    /// With its one thread stuck, a lookup whose waits were all given up before it started is never made.
    @Test func aLookupNobodyWaitsForAnyMoreIsDropped() async throws {
        let dns = FakeDNS(hanging: ["stuck.example"])
        let resolver = Resolver(name: "test", maxThreads: 1, maxSlowThreads: 0, lookUp: dns.lookUp)
        _ = resolver.resolve(host: "stuck.example", port: 443) { _ in }
        while dns.count("stuck.example") == 0 { await Task.yield() }
        let wait = resolver.resolve(host: "dropped.example", port: 443) { _ in
            Issue.record("a cancelled wait answered")
        }
        wait?.cancel()
        async let later = resolve(resolver, "later.example")

        dns.release(1)
        #expect(try await later.get().count == 1)
        #expect(dns.count("dropped.example") == 0)
    }
}
