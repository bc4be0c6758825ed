import FCMSimulator
import HTTP
import Support
import Synchronization
import Testing

/// The shell's open route table: it serves the sides it is given, whatever they are, and nothing else.
@Suite struct SimulatorShellTests {
    /// A side of no provider: `POST /echo` answers its body and counts, `/control`'s `echo_status` sets the status.
    final class EchoSide: SimulatorSide {
        static let help = SimulatorHelp(
            intro: "Echo (POST /echo): answers what it is sent.", flags: ["--echo-prefix"],
            options: "  --echo-prefix TEXT       put TEXT before every answer",
            section: "Echo (POST /echo): the body, after the prefix.",
            control: "  {\"echo_status\": 202}                                  the status of the next echoes",
            stats: "Echo adds echoes.")
        let prefix: String
        let status = Mutex(200)
        let echoes = Mutex(0)

        init(flags: [String: String]) throws(FCMSimulator.Configuration.ArgumentError) {
            if flags["--echo-prefix"] == "" { throw .init("--echo-prefix must not be empty") }
            prefix = flags["--echo-prefix"] ?? ""
        }

        let routes = ["POST /echo"]

        func handles(method: String, path: String) -> Bool { method == "POST" && path == "/echo" }

        func bodyLimit(path: String) -> Int { 4 }

        func handle(_ request: HTTPRequest, simulator: FCMSimulator, responder: any HTTPResponder) {
            echoes.withLock { $0 += 1 }
            responder.respond(.text(status.withLock { $0 }, prefix + String(decoding: request.body, as: UTF8.self)))
        }

        let controlKeys = ["echo_status"]

        func control(_ key: String, _ value: JSON) throws(BadRequest) -> SimulatorSideChange {
            guard let code = value.int64Value, (200...299).contains(code) else {
                throw BadRequest(message: "\"echo_status\" must be a 2xx status")
            }
            return SimulatorSideChange { self.status.withLock { $0 = Int(code) } }
        }

        func reset() {
            echoes.withLock { $0 = 0 }
        }

        var statsMembers: [(key: String, value: JSON)] { [("echoes", .int(echoes.withLock { $0 }))] }

        func announcement(baseURL: String) -> [(key: String, value: String)] { [("echo_url", baseURL + "/echo")] }
    }

    @Test func aSideItIsGivenAnswersItsPathsAndNoSideMeans404() throws {
        let simulator = FCMSimulator(sides: [try EchoSide(flags: ["--echo-prefix": "> "])])
        let echoed = try simulator.call("POST", "/echo", body: "hi")
        #expect(echoed.status == 200)
        #expect(echoed.text == "> hi")
        #expect(simulator.bodyLimit(method: "POST", path: "/echo") == 4)

        let missing = try simulator.call("POST", "/fcm/send", body: "{}")
        #expect(missing.status == 404)
        #expect(missing.text == "Not found: the simulator serves POST /echo, POST /control, GET /stats\n")
        #expect(try simulator.call("GET", "/echo").status == 404, "the side takes POST only")
        #expect(try FCMSimulator().call("POST", "/echo", body: "hi").status == 404, "no side, no route")
    }

    @Test func aSidesControlKeysStatsAndResetGoThroughTheShell() throws {
        let simulator = FCMSimulator(sides: [try EchoSide(flags: [:])])
        // A refused body changes nothing, the side's key included.
        let refused = try simulator.control(#"{"echo_status": 201, "fail_next": -1}"#)
        #expect(refused.status == 400)
        #expect(try simulator.call("POST", "/echo", body: "a").status == 200)
        let unknown = try simulator.control(#"{"nope": 1}"#)
        #expect(unknown.text.hasSuffix("slow_rate, drop_rate, echo_status\n"))

        #expect(try simulator.control(#"{"echo_status": 202}"#).status == 200)
        #expect(try simulator.call("POST", "/echo", body: "b").status == 202)
        let stats = try simulator.call("GET", "/stats").json()
        #expect(stats["echoes"]?.int64Value == 2)
        #expect(stats.keys.suffix(2) == ["echoes", "requests"])

        #expect(try simulator.control(#"{"reset": true}"#).status == 200)
        #expect(try simulator.call("GET", "/stats").json()["echoes"]?.int64Value == 0)
        #expect(simulator.announcement(baseURL: "http://h:1").map(\.value) == ["http://h:1/echo"])
    }

    @Test func aSidesFlagsAreItsOwnAndItsHelpHasItsPlaces() throws {
        let simulator = try FCMSimulator.parse(
            arguments: ["--seed", "3", "--echo-prefix=* "], sides: [EchoSide.self])
        #expect(simulator.configuration.seed == 3)
        #expect(simulator.side(EchoSide.self)?.prefix == "* ")
        #expect(throws: FCMSimulator.Configuration.ArgumentError.self) {
            try FCMSimulator.parse(arguments: ["--echo-prefix", "a", "--echo-prefix", "b"], sides: [EchoSide.self])
        }
        #expect(throws: FCMSimulator.Configuration.ArgumentError.self) {
            try FCMSimulator.parse(arguments: ["--echo-prefix="], sides: [EchoSide.self])
        }
        #expect(throws: FCMSimulator.Configuration.ArgumentError.self) {
            try FCMSimulator.parse(arguments: ["--echo-prefix", "a"], sides: [])
        }
        let help = FCMSimulator.help(sides: [EchoSide.self])
        for part in [EchoSide.help.intro, EchoSide.help.options, EchoSide.help.section, EchoSide.help.control] {
            #expect(help.contains(part + "\n"))
        }
        #expect(help.contains("\"http\": \"HTTP/1.1\"|\"HTTP/2\"}.\nEcho adds echoes.\n"))
    }
}
