import Dispatch
import Queue
import Synchronization

/// One message's deliveries as a claim returned them, one after another: what the provider makes requests of at once.
struct ClaimedRun: Sendable {
    var message: ClaimedMessage
    var deliveries: [ClaimedDelivery]
}

/// What the render stage made of a claim, handed back to the app's scheduler (`AppScheduler.rendered`).
enum Rendering: Sendable {
    /// The claim's requests, in its order. `renewalDue`: the credential they carry is in its last minutes.
    case requests([PreparedRequest], renewalDue: Bool)
    /// The provider has no usable credential: nothing was made, and the claim goes back to the queue while one is
    /// obtained.
    case noCredential
}

/// The step between a claim and its sends: the provider's `requests(for:…)` for each of the claim's runs, with the
/// credential current at that moment. It is where the CPU of a send goes (Web Push encrypts every request: a key
/// pair, an ECDH, HKDF and AES-GCM), so the engine runs it off its queue, a claim's runs split over every core, and the
/// scheduler only sees the requests come back as an event.
enum RenderStage {
    /// Fewer runs than this in a chunk are not worth handing to another thread.
    static let runsPerChunk = 8

    /// The requests for `runs`, in their order: a claim of many runs is split into a few chunks per core, made on all
    /// of them at once (`concurrentPerform`, the calling thread one of them).
    static func render(_ runs: [ClaimedRun], with provider: any Provider, now: Int64, cores: Int) -> Rendering {
        let credentials = provider.credentials
        let credential = credentials?.current(now: now)
        if credentials != nil, credential == nil { return .noCredential }
        let renewalDue = credentials?.renewalDue(now: now) ?? false
        // A few chunks per thread, so that one slow chunk does not leave the others idle at the end.
        let chunks = min(runs.count / runsPerChunk, 4 * max(1, cores))
        guard chunks > 1 else {
            return .requests(requests(for: runs[...], with: provider, credential: credential, now: now),
                             renewalDue: renewalDue)
        }
        let made = Mutex([[PreparedRequest]](repeating: [], count: chunks))
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            let slice = runs[runs.count * chunk / chunks..<runs.count * (chunk + 1) / chunks]
            let requests = requests(for: slice, with: provider, credential: credential, now: now)
            made.withLock { $0[chunk] = requests }
        }
        return .requests(made.withLock { $0.flatMap { $0 } }, renewalDue: renewalDue)
    }

    private static func requests(
        for runs: ArraySlice<ClaimedRun>, with provider: any Provider, credential: String?, now: Int64
    ) -> [PreparedRequest] {
        var requests: [PreparedRequest] = []
        requests.reserveCapacity(runs.count)
        for run in runs {
            requests += provider.requests(for: run.message, deliveries: run.deliveries, credential: credential, now: now)
        }
        return requests
    }
}
