import Dispatch
import HTTP
import Support
import Synchronization

/// A stand-in for the push services Herald sends to, with deterministic, scriptable behaviour: the test double of
/// Herald's delivery engine, `herald fcm-sim`, and what `herald serve --sandbox` sends to.
///
/// The shell is provider-free: it routes to the sides it is given (`SimulatorSide`, one per provider, in the
/// provider's folder and listed by `ProviderList`), and keeps what they share — token behaviours by name
/// (`TokenBehaviour`, aliases), request-level faults at configured rates or queued through `/control`, counters and
/// the request log (`SimulatorState`), and the HTTPS front (`serveTLS`). Its own routes:
/// - `POST /control`: queue faults and change them, e.g. `{"fail_next": 2, "status": 503, "retry_after": "2"}`
///   (see `ControlChange.parse`), and the sides' own keys; answers the fault settings now in force.
/// - `GET /stats[?requests=N]`: `Stats.json(requestLimit:)` with the sides' members.
/// Any other path is a side's, or 404.
///
/// ```swift
/// let simulator = FCMSimulator(configuration: .init(aliases: ["42": "notreg-42"]), sides: sides)
/// simulator.apply([.next(.serverError, count: 1), .retryAfter(.seconds(2))])
/// // serve it with HTTPServer, or call handle(_:responder:) directly; then:
/// simulator.stats().requests.map(\.timeToLive)
/// ```
///
/// A drop should close the connection without a reply, but `HTTPResponder` cannot close a connection: a drop is
/// answered with an empty 500 carrying `Connection: close`, which `HTTPServer` currently replaces with its own
/// framing, so the connection stays open.
public final class FCMSimulator: HTTPHandler {
    public static let sendBodyLimit = 1 << 20
    public static let controlBodyLimit = 64 << 10

    public let configuration: Configuration
    public let sides: [any SimulatorSide]
    let state: Mutex<SimulatorState>

    public init(configuration: Configuration = Configuration(), sides: [any SimulatorSide] = []) {
        self.configuration = configuration
        self.sides = sides
        let seed = configuration.seed ?? .random(in: .min ... .max)
        state = Mutex(SimulatorState(configuration: configuration, seed: seed))
    }

    /// The side of type `Side`, as given.
    public func side<Side: SimulatorSide>(_ type: Side.Type) -> Side? {
        sides.lazy.compactMap { $0 as? Side }.first
    }

    // MARK: - In-process control

    /// What was received since start or the last reset, with the last `requestLimit` requests (all kept if nil).
    public func stats(requestLimit: Int? = nil) -> Stats {
        state.withLock { $0.snapshot(requestLimit: requestLimit) }
    }

    /// Applies changes in order, as `POST /control` does; a reset resets the sides too.
    public func apply(_ changes: [ControlChange]) {
        state.withLock { state in
            for change in changes { state.apply(change) }
        }
        if changes.contains(.reset) { sides.forEach { $0.reset() } }
    }

    /// Clears counters, the request log and token sightings, restores the configured faults, and resets the sides.
    public func reset() {
        apply([.reset])
    }

    // MARK: - For the sides

    /// Runs `body` on the shared state under its lock: no I/O or slow work inside.
    public func withState<Result>(_ body: (inout SimulatorState) -> Result) -> Result {
        state.withLock { body(&$0) }
    }

    /// The behaviour of a device token: its own name's, or its alias's (`Configuration.aliases`).
    public func behaviour(ofToken token: String) -> TokenBehaviour {
        TokenBehaviour(token: configuration.aliases[token] ?? token)
    }

    /// The FCM error code a device token's name (or its alias) calls for this time, nil for a delivery: the one rule
    /// of token prefixes, which sides answer in their own words. Counts the sightings `failFirst` needs.
    public func errorCode(for device: String) -> String? {
        let behaviour = behaviour(ofToken: device)
        return state.withLock { $0.errorCode(behaviour, sightingKey: device) }
    }

    /// Answers `response`, at once or after `delayMilliseconds` (a slow fault), off the caller's thread.
    public static func respond(
        _ response: HTTPResponse, after delayMilliseconds: Int, to responder: any HTTPResponder
    ) {
        guard delayMilliseconds > 0 else { return responder.respond(response) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delayMilliseconds)) {
            responder.respond(response)
        }
    }

    /// The "fcm-sim listening" line's fields of every side for a listener at `baseURL`.
    public func announcement(baseURL: String) -> [(key: String, value: String)] {
        sides.flatMap { $0.announcement(baseURL: baseURL) }
    }

    // MARK: - HTTPHandler

    public func bodyLimit(method: String, path: String) -> Int {
        side(for: method, path)?.bodyLimit(path: path) ?? Self.controlBodyLimit
    }

    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        switch (request.method, request.path) {
        case ("POST", "/control"):
            control(request, responder)
        case ("GET", "/stats"):
            statsEndpoint(request, responder)
        case (_, "/control"):
            responder.respond(.text(405, "Use POST\n", headers: [("Allow", "POST")]))
        case (_, "/stats"):
            responder.respond(.text(405, "Use GET\n", headers: [("Allow", "GET")]))
        default:
            guard let side = side(for: request.method, request.path) else {
                let routes = sides.flatMap(\.routes) + ["POST /control", "GET /stats"]
                return responder.respond(
                    .text(404, "Not found: the simulator serves " + routes.joined(separator: ", ") + "\n"))
            }
            side.handle(request, simulator: self, responder: responder)
        }
    }

    private func side(for method: String, _ path: String) -> (any SimulatorSide)? {
        sides.first { $0.handles(method: method, path: path) }
    }

    // MARK: - /control and /stats

    private func control(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        do {
            let (changes, sideChanges) = try ControlChange.parse(request.body, sides: sides)
            let settings = state.withLock { state in
                for change in changes { state.apply(change) }
                return state.faultsJSON
            }
            if changes.contains(.reset) { sides.forEach { $0.reset() } }
            sideChanges.forEach { $0.apply() }
            responder.respond(.json(200, settings.serialized()))
        } catch {
            responder.respond(.text(400, error.message + "\n"))
        }
    }

    private func statsEndpoint(_ request: HTTPRequest, _ responder: any HTTPResponder) {
        var limit: Int?
        if let text = request.query["requests"] {
            guard let value = Int(text), value >= 0 else {
                return responder.respond(.text(400, "requests must be a whole number of requests to list\n"))
            }
            limit = value
        }
        let stats = stats(requestLimit: limit)
        var body: [UInt8] = []
        body.reserveCapacity(256 + stats.requests.count * 160)
        stats.json(sideMembers: sides.flatMap(\.statsMembers)).append(to: &body)
        responder.respond(HTTPResponse(status: 200, headers: Self.jsonHeaders, body: body))
    }

    public static let jsonHeaders = [(name: "Content-Type", value: "application/json; charset=UTF-8")]
}
