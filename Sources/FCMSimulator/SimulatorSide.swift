import HTTP
import Support

/// A provider's side of the simulator (SPEC §21): the paths it answers and how, its own `herald fcm-sim` flags with
/// their help, and its part of `/control`, `/stats` and a reset. It lives in its provider's folder
/// (`Sources/Providers/<Provider>/Simulator`); `FCMSimulator` routes to the sides it is given and names none.
///
/// A side answers with the shell's shared parts: the token behaviours (`FCMSimulator.behaviour(ofToken:)`,
/// `errorCode(for:)`), the request-level faults, the counters and the request log (`FCMSimulator.withState`).
///
/// ```swift
/// final class EchoSide: SimulatorSide {
///     static let help = SimulatorHelp()
///     init(flags: [String: String]) {}
///     let routes = ["POST /echo"]
///     func handles(method: String, path: String) -> Bool { path == "/echo" }
///     func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder) {
///         responder.respond(HTTPResponse(status: 200, body: request.body))
///     }
/// }
/// let simulator = FCMSimulator(sides: [try EchoSide(flags: [:])])
/// ```
public protocol SimulatorSide: AnyObject, Sendable {
    /// Its flags of `herald fcm-sim` and its parts of `--help`.
    static var help: SimulatorHelp { get }
    /// The side `herald fcm-sim` makes from the values of its own flags (`help.flags`, by name; the absent ones
    /// missing), checked; no flags make the side the sandbox starts from.
    init(flags: [String: String]) throws(FCMSimulator.Configuration.ArgumentError)

    /// Its routes as a 404 lists them: `POST /fcm/send`.
    var routes: [String] { get }
    /// Whether it answers `method` on `path`. A side that owns a path whatever the method answers 405 itself.
    func handles(method: String, path: String) -> Bool
    /// The largest request body it takes on `path`.
    func bodyLimit(path: String) -> Int
    func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder)

    /// Its keys of `POST /control`, after the shell's in the refusal of an unknown key.
    var controlKeys: [String] { get }
    /// Reads one of `controlKeys`; the change is applied only once the whole body has been read.
    func control(_ key: String, _ value: JSON) throws(BadRequest) -> SimulatorSideChange
    /// Forgets what `{"reset": true}` clears of its own (its counters, queued faults).
    func reset()
    /// Its members of `GET /stats`, before `requests`.
    var statsMembers: [(key: String, value: JSON)] { get }
    /// Its fields of the "fcm-sim listening" line for a listener at `baseURL` (`http://HOST:PORT`).
    func announcement(baseURL: String) -> [(key: String, value: String)]
}

extension SimulatorSide {
    public func bodyLimit(path: String) -> Int { FCMSimulator.sendBodyLimit }
    public var controlKeys: [String] { [] }
    public func control(_ key: String, _ value: JSON) throws(BadRequest) -> SimulatorSideChange {
        throw BadRequest(message: "unknown control key \"\(key)\"")
    }
    public func reset() {}
    public var statsMembers: [(key: String, value: JSON)] { [] }
    public func announcement(baseURL: String) -> [(key: String, value: String)] { [] }
}

/// A change a side read from `/control`, applied after the whole body was read (so a refused body changes nothing).
public struct SimulatorSideChange: Sendable {
    let apply: @Sendable () -> Void

    public init(_ apply: @escaping @Sendable () -> Void) {
        self.apply = apply
    }
}

/// A side's parts of `herald fcm-sim --help`, each in the help's own layout (two-space indent, 120 columns).
public struct SimulatorHelp: Sendable {
    /// How to point Herald at it, under the usage line.
    public var intro: String
    /// Its flags, as `init(flags:)` reads them: each takes a value.
    public var flags: [String]
    /// Their lines in "Options:".
    public var options: String
    /// Its own section: what it answers and how.
    public var section: String
    /// Its lines in "Control:".
    public var control: String
    /// What it adds to `GET /stats`, a sentence.
    public var stats: String

    public init(
        intro: String = "", flags: [String] = [], options: String = "", section: String = "", control: String = "",
        stats: String = ""
    ) {
        (self.intro, self.flags, self.options, self.section) = (intro, flags, options, section)
        (self.control, self.stats) = (control, stats)
    }
}
