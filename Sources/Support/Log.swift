import Foundation
import Synchronization

/// Structured logging: one JSON object per line on stderr (`ts`, `level`, `msg`, fields).
/// Callers never pass secrets or payloads; fields are plain strings and numbers.
public enum Log {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warn, error

        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warn: "warn"
            case .error: "error"
            }
        }

        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public enum Value: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)

        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int64) { self = .int(value) }
    }

    private static let minimum = Atomic<Int>(Level.info.rawValue)
    private static let output = Mutex<Void>(())

    public static var level: Level {
        get { Level(rawValue: minimum.load(ordering: .relaxed)) ?? .info }
        set { minimum.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// The fields are only built when debug lines are written: callers log at this level on hot paths.
    public static func debug(_ message: String, _ fields: @autoclosure () -> KeyValuePairs<String, Value> = [:]) {
        guard Level.debug.rawValue >= minimum.load(ordering: .relaxed) else { return }
        write(.debug, message, fields())
    }

    public static func info(_ message: String, _ fields: KeyValuePairs<String, Value> = [:]) {
        write(.info, message, fields)
    }

    /// Fields gathered at run time, in order: what several parts contribute (the simulator's sides).
    public static func info(_ message: String, _ fields: [(key: String, value: Value)]) {
        write(.info, message, fields)
    }

    public static func warn(_ message: String, _ fields: KeyValuePairs<String, Value> = [:]) {
        write(.warn, message, fields)
    }

    public static func error(_ message: String, _ fields: KeyValuePairs<String, Value> = [:]) {
        write(.error, message, fields)
    }

    /// The line `write` would print, without printing it.
    public static func line(
        _ level: Level, _ message: String, _ fields: some Sequence<(key: String, value: Value)>, now: Date = Date()
    ) -> String {
        var line = "{\"ts\":\""
        line += timestamp(now)
        line += "\",\"level\":\"\(level.name)\",\"msg\":"
        appendJSONString(message, to: &line)
        for (key, value) in fields {
            line += ","
            appendJSONString(key, to: &line)
            line += ":"
            switch value {
            case .string(let string): appendJSONString(string, to: &line)
            case .int(let int): line += String(int)
            case .double(let double): line += double.isFinite ? String(double) : "null"
            case .bool(let bool): line += bool ? "true" : "false"
            }
        }
        line += "}\n"
        return line
    }

    private static func write(_ level: Level, _ message: String, _ fields: some Sequence<(key: String, value: Value)>) {
        guard level.rawValue >= minimum.load(ordering: .relaxed) else { return }
        let text = line(level, message, fields)
        output.withLock { _ in
            var bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { buffer in
                    Foundation.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                }
                if written <= 0 { if errno == EINTR { continue } else { break } }
                offset += written
            }
            bytes.removeAll()
        }
    }

    private static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        let millis = Int((date.timeIntervalSince1970 - Double(seconds)) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}
