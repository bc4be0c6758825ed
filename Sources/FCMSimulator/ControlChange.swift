import Support

/// One change to the simulator's request-level faults, from `POST /control` or `FCMSimulator.apply(_:)` (a side's own
/// keys are its `SimulatorSideChange`s).
public enum ControlChange: Sendable, Equatable {
    /// Clears every counter, the request log and the per-token "seen" counts, and restores the faults
    /// (rates, queues, status, `Retry-After`, delay) and the fault draws' seed to the configuration's.
    case reset
    /// The next `count` sends get `fault`, before any drawn at a rate (replaces the queue for that fault).
    case next(FCMSimulator.Fault, count: Int)
    case rate(FCMSimulator.Fault, Double)
    /// Status of injected server failures.
    case failStatus(Int)
    case retryAfter(FCMSimulator.RetryAfter?)
    /// Turns the current delta-seconds `Retry-After` into an HTTP-date the same number of seconds ahead (1 when
    /// none is set), or back.
    case retryAfterAsDate(Bool)
    case slowMilliseconds(Int)
}

extension FCMSimulator {
    /// Request-level faults. A queued or drawn `drop`, `unauthorized` or `serverError` decides the reply, in that
    /// order of precedence; `slow` delays whatever the reply is.
    public enum Fault: String, Sendable, Equatable, CaseIterable {
        case serverError
        case unauthorized
        case slow
        case drop
    }
}

// MARK: - POST /control

extension ControlChange {
    /// Reads a `/control` body, e.g. `{"fail_next": 2, "status": 503, "retry_after": "2"}`, into changes in the
    /// order they apply: `reset` first, `retry_after` before `retry_after_date`; then the sides' changes, for the
    /// keys they own. Unknown keys are errors.
    static func parse(
        _ body: [UInt8], sides: [any SimulatorSide]
    ) throws(BadRequest) -> (changes: [ControlChange], sides: [SimulatorSideChange]) {
        let command: JSON
        do {
            command = try JSON.parse(body)
        } catch {
            throw BadRequest(message: "control body is not JSON: \(error)")
        }
        guard let members = command.objectValue else { throw BadRequest(message: "control body must be an object") }
        var changes: [ControlChange] = []
        var sideChanges: [SimulatorSideChange] = []
        var dateForm: Bool?
        for (key, value) in members {
            switch key {
            case "reset":
                guard let reset = value.boolValue else { throw BadRequest(message: "\"reset\" must be true or false") }
                if reset { changes.insert(.reset, at: 0) }
            case "fail_next": changes.append(.next(.serverError, count: try count(key, value)))
            case "unauthorized_next": changes.append(.next(.unauthorized, count: try count(key, value)))
            case "slow_next": changes.append(.next(.slow, count: try count(key, value)))
            case "drop_next": changes.append(.next(.drop, count: try count(key, value)))
            case "fail_rate": changes.append(.rate(.serverError, try rate(key, value)))
            case "unauthorized_rate": changes.append(.rate(.unauthorized, try rate(key, value)))
            case "slow_rate": changes.append(.rate(.slow, try rate(key, value)))
            case "drop_rate": changes.append(.rate(.drop, try rate(key, value)))
            case "status":
                guard let status = value.int64Value, status == 429 || (500...599).contains(status) else {
                    throw BadRequest(message: "\"status\" must be 429 or an integer from 500 to 599")
                }
                changes.append(.failStatus(Int(status)))
            case "slow_ms":
                changes.append(.slowMilliseconds(try count(key, value)))
            case "retry_after":
                changes.append(.retryAfter(try retryAfter(value)))
            case "retry_after_date":
                guard let flag = value.boolValue else {
                    throw BadRequest(message: "\"retry_after_date\" must be true or false")
                }
                dateForm = flag
            default:
                guard let side = sides.first(where: { $0.controlKeys.contains(key) }) else {
                    let known = ownKeys + sides.flatMap(\.controlKeys)
                    throw BadRequest(message: "unknown control key \"\(key)\"; known: " + known.joined(separator: ", "))
                }
                sideChanges.append(try side.control(key, value))
            }
        }
        if let dateForm { changes.append(.retryAfterAsDate(dateForm)) }
        return (changes, sideChanges)
    }

    private static let ownKeys = [
        "reset", "fail_next", "status", "retry_after", "retry_after_date", "unauthorized_next", "slow_next", "slow_ms",
        "drop_next", "fail_rate", "unauthorized_rate", "slow_rate", "drop_rate",
    ]

    /// A whole number from 0 to 1000000000, as every queued count is (`fail_next`, a side's `token_fail_next`).
    public static func count(_ key: String, _ value: JSON) throws(BadRequest) -> Int {
        guard let count = value.int64Value, (0...1_000_000_000).contains(count) else {
            throw BadRequest(message: "\"\(key)\" must be a whole number from 0 to 1000000000")
        }
        return Int(count)
    }

    private static func rate(_ key: String, _ value: JSON) throws(BadRequest) -> Double {
        guard let rate = value.doubleValue, (0...1).contains(rate) else {
            throw BadRequest(message: "\"\(key)\" must be a number from 0 to 1")
        }
        return rate
    }

    /// `2` or `"2"` is delta-seconds; any other string is sent verbatim; `null` sends no header.
    private static func retryAfter(_ value: JSON) throws(BadRequest) -> FCMSimulator.RetryAfter? {
        if value.isNull { return nil }
        if let seconds = value.int64Value, seconds >= 0, let exact = Int(exactly: seconds) { return .seconds(exact) }
        guard let text = value.stringValue, !text.contains(where: { $0 == "\r" || $0 == "\n" }) else {
            throw BadRequest(message: "\"retry_after\" must be whole seconds, a header value as a string, or null")
        }
        if let seconds = Int(text), seconds >= 0 { return .seconds(seconds) }
        return .verbatim(text)
    }
}
