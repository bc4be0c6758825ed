import Classify
import Queue
import Support

/// The FCM HTTP v1 request body of a message that arrived in v1 shape (SPEC §13), rendered once: the stored
/// `message` as compact JSON, cut where the per-send values go, so each send only concatenates bytes.
///
/// A send fills in the target (`token`, `fid`, `topic` or `condition`) and the remaining lifetime in the TTL fields
/// the message carries: `android.ttl` and `webpush.headers.TTL` are its own value less the time already spent in
/// the queue. `apns.headers.apns-expiration` is an absolute time, already right at every send, so it stays as sent.
/// A TTL field the sender left out is not added. Everything else — `data`, `notification`, `android`, `apns`,
/// `webpush`, `fcm_options` — goes out as it came, in the sender's key order.
///
/// ```swift
/// let template = V1Template(message)  // payload {"data":{"a":"b"},"android":{"ttl":"600s","priority":"high"}}
/// template.body(target: "tok-1", kind: .tokens, elapsedSeconds: 10)
/// // {"validate_only":false,"message":{"token":"tok-1","data":{"a":"b"},"android":{"ttl":"590s","priority":"high"}}}
/// ```
public struct V1Template: Sendable {
    private enum Slot {
        /// `android.ttl`: a protobuf Duration, `"<seconds>s"`.
        case duration(original: Int)
        /// `webpush.headers.TTL`: whole seconds as a string.
        case seconds(original: Int)
    }

    private let head: [UInt8]
    private let tokenField: TokenField
    /// `segments.count == slots.count + 1`: segment, slot, segment, …, segment. The first begins with `,` unless
    /// the message has nothing but its target.
    private var segments: [[UInt8]] = []
    private var slots: [Slot] = []

    /// A message stored in v1 shape: its TTL fields become slots.
    public init(_ message: ClaimedMessage) {
        self.init(dryRun: message.dryRun, tokenField: message.tokenField,
                  members: (try? JSON.parse(Array(message.payload.utf8)))?.objectValue ?? [], slots: true)
    }

    /// `members` already final for this send (a legacy-shaped message mapped by `V1Message` at one `now`): no
    /// slots, only the target differs between bodies.
    public init(dryRun: Bool, tokenField: TokenField, members: [(key: String, value: JSON)]) {
        self.init(dryRun: dryRun, tokenField: tokenField, members: members, slots: false)
    }

    private init(dryRun: Bool, tokenField: TokenField, members: [(key: String, value: JSON)], slots: Bool) {
        head = Array(#"{"validate_only":\#(dryRun),"message":{"#.utf8)
        self.tokenField = tokenField
        var current: [UInt8] = []
        for member in members {
            current.append(UInt8(ascii: ","))
            appendJSONString(member.key, to: &current)
            current.append(UInt8(ascii: ":"))
            if slots {
                emit(member.value, path: [member.key], into: &current)
            } else {
                member.value.append(to: &current)
            }
        }
        segments.append(current)
    }

    /// The request body for one target; `elapsedSeconds` is how much of the message's TTL has passed.
    public func body(target: String, kind: TargetKind, elapsedSeconds: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(head.count + segmentBytes + target.utf8.count + 16 * slots.count + 32)
        bytes += head
        switch kind {
        case .tokens: bytes += tokenField == .fid ? #""fid":"#.utf8 : #""token":"#.utf8
        case .topic: bytes += #""topic":"#.utf8
        case .condition: bytes += #""condition":"#.utf8
        }
        let prefix = "/topics/"
        appendJSONString(kind == .topic && target.hasPrefix(prefix) ? String(target.dropFirst(prefix.count)) : target,
                         to: &bytes)
        for (index, slot) in slots.enumerated() {
            bytes += segments[index]
            switch slot {
            case .duration(let original): bytes += "\"\(max(0, original - elapsedSeconds))s\"".utf8
            case .seconds(let original): bytes += "\"\(max(0, original - elapsedSeconds))\"".utf8
            }
        }
        bytes += segments[slots.count]
        bytes += "}}".utf8
        return bytes
    }

    /// The segments' length together, for the body's one allocation.
    private var segmentBytes: Int { segments.reduce(0) { $0 + $1.count } }

    /// Writes `value` compactly, leaving a slot where a TTL field is. Only the first levels can hold one.
    private mutating func emit(_ value: JSON, path: [String], into current: inout [UInt8]) {
        if case .string(let text) = value, let slot = Self.slot(at: path, text) {
            segments.append(current)
            current = []
            slots.append(slot)
            return
        }
        guard path.count < 3, case .object(let members) = value else { return value.append(to: &current) }
        current.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { current.append(UInt8(ascii: ",")) }
            appendJSONString(member.key, to: &current)
            current.append(UInt8(ascii: ":"))
            emit(member.value, path: path + [member.key], into: &current)
        }
        current.append(UInt8(ascii: "}"))
    }

    private static func slot(at path: [String], _ text: String) -> Slot? {
        switch path {
        case ["android", "ttl"]:
            // Ingest checked the format; the fraction of a second is dropped as FCM's own rounding would.
            guard text.hasSuffix("s"), let whole = text.dropLast().split(separator: ".").first, let seconds = Int(whole)
            else { return nil }
            return .duration(original: seconds)
        case ["webpush", "headers", "TTL"]:
            return Int(text).map { .seconds(original: $0) }
        default:
            return nil
        }
    }
}
