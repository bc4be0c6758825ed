import Synchronization

/// In-memory Prometheus metrics: counters and gauges with labels, and one kind of histogram. Cheap to update from
/// any thread (one short lock); `render()` writes the text exposition format without touching the database.
public final class Metrics: Sendable {
    public enum Kind: String, Sendable { case counter, gauge, histogram }

    public struct Family: Sendable {
        public var name: String
        public var kind: Kind
        public var help: String

        public init(_ name: String, _ kind: Kind, _ help: String) {
            self.name = name
            self.kind = kind
            self.help = help
        }
    }

    /// Upper bounds in seconds of the request-duration histogram buckets.
    public static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.buckets.count)
        var count: UInt64 = 0
        var sum = 0.0

        mutating func record(_ seconds: Double, in bucket: Int?) {
            if let bucket { counts[bucket] += 1 }
            count += 1
            sum += seconds
        }
    }

    private struct State {
        /// Family name → rendered label set (`app="x",code="200"`) → value.
        var values: [String: [String: Double]] = [:]
        var histograms: [String: [String: Histogram]] = [:]
    }

    /// One series (a family and its labels) with its label text rendered once, for a path that updates it thousands
    /// of times a second: the update is then one lock and two dictionary look-ups, with no text built.
    ///
    /// ```swift
    /// let ok = metrics.series("herald_fcm_requests_total", ["app": "default", "code": "200"])
    /// metrics.increment(ok)
    /// ```
    public struct Series: Sendable, Hashable {
        fileprivate let name: String
        fileprivate let key: String
    }

    private let families: [Family]
    private let state = Mutex(State())

    public init(_ families: [Family]) {
        self.families = families
    }

    public func series(_ name: String, _ labels: KeyValuePairs<String, String> = [:]) -> Series {
        Series(name: name, key: Self.labelText(labels))
    }

    public func increment(_ name: String, _ labels: KeyValuePairs<String, String> = [:], by amount: Double = 1) {
        increment(series(name, labels), by: amount)
    }

    public func increment(_ series: Series, by amount: Double = 1) {
        state.withLock { $0.values[series.name, default: [:]][series.key, default: 0] += amount }
    }

    public func set(_ name: String, _ labels: KeyValuePairs<String, String> = [:], to value: Double) {
        let key = Self.labelText(labels)
        state.withLock { $0.values[name, default: [:]][key] = value }
    }

    /// Replaces every series of a gauge at once (series that vanished are dropped).
    public func replace(_ name: String, with series: [(labels: KeyValuePairs<String, String>, value: Double)]) {
        let rendered = Dictionary(series.map { (Self.labelText($0.labels), $0.value) }, uniquingKeysWith: { $1 })
        state.withLock { $0.values[name] = rendered }
    }

    public func observe(_ name: String, _ labels: KeyValuePairs<String, String> = [:], seconds: Double) {
        observe(series(name, labels), seconds: seconds)
    }

    public func observe(_ series: Series, seconds: Double) {
        let bucket = Self.buckets.firstIndex(where: { seconds <= $0 })
        state.withLock { state in
            // In place: a copy out and back would copy the bucket array on every observation.
            state.histograms[series.name, default: [:]][series.key, default: Histogram()].record(seconds, in: bucket)
        }
    }

    /// Many observations of one series under one lock.
    public func observe(_ series: Series, seconds: [Double]) {
        guard !seconds.isEmpty else { return }
        let buckets = seconds.map { value in Self.buckets.firstIndex(where: { value <= $0 }) }
        state.withLock { state in
            // Taken out and put back once for the batch, not looked up per observation.
            var histogram = state.histograms[series.name]?[series.key] ?? Histogram()
            for (value, bucket) in zip(seconds, buckets) { histogram.record(value, in: bucket) }
            state.histograms[series.name, default: [:]][series.key] = histogram
        }
    }

    /// The value of one series, for tests and the CLI.
    public func value(_ name: String, _ labels: KeyValuePairs<String, String> = [:]) -> Double? {
        let key = Self.labelText(labels)
        return state.withLock { $0.values[name]?[key] }
    }

    /// Every series of a counter or gauge with its labels, for readers that summarise them (the console's chart and
    /// its answers by code) without knowing the label values in advance.
    public func values(_ name: String) -> [(labels: [String: String], value: Double)] {
        let series = state.withLock { $0.values[name] ?? [:] }
        return series.sorted(by: { $0.key < $1.key }).map { (Self.labels(in: $0.key), $0.value) }
    }

    /// The labels of a rendered label set, `labelText` read back.
    private static func labels(in text: String) -> [String: String] {
        var labels: [String: String] = [:]
        var bytes = text.utf8.makeIterator()
        var name: [UInt8] = []
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "=") else {
                if byte != UInt8(ascii: ",") { name.append(byte) }
                continue
            }
            _ = bytes.next()  // the opening quote
            var value: [UInt8] = []
            while let byte = bytes.next(), byte != UInt8(ascii: "\"") {
                guard byte == UInt8(ascii: "\\"), let escaped = bytes.next() else {
                    value.append(byte)
                    continue
                }
                value.append(escaped == UInt8(ascii: "n") ? UInt8(ascii: "\n") : escaped)
            }
            labels[String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
            name = []
        }
        return labels
    }

    /// The Prometheus text exposition format (version 0.0.4).
    public func render() -> String {
        let snapshot = state.withLock { $0 }
        var text = ""
        for family in families {
            text += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.rawValue)\n"
            if family.kind == .histogram {
                for (labels, histogram) in (snapshot.histograms[family.name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    var cumulative: UInt64 = 0
                    let prefix = labels.isEmpty ? "" : labels + ","
                    for (index, bound) in Self.buckets.enumerated() {
                        cumulative += histogram.counts[index]
                        text += "\(family.name)_bucket{\(prefix)le=\"\(Self.number(bound))\"} \(cumulative)\n"
                    }
                    text += "\(family.name)_bucket{\(prefix)le=\"+Inf\"} \(histogram.count)\n"
                    let braces = labels.isEmpty ? "" : "{\(labels)}"
                    text += "\(family.name)_sum\(braces) \(Self.number(histogram.sum))\n"
                    text += "\(family.name)_count\(braces) \(histogram.count)\n"
                }
            } else {
                for (labels, value) in (snapshot.values[family.name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    let series = labels.isEmpty ? family.name : "\(family.name){\(labels)}"
                    text += "\(series) \(Self.number(value))\n"
                }
            }
        }
        return text
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// `a="x",b="y"` with the values escaped as the exposition format requires.
    private static func labelText(_ labels: KeyValuePairs<String, String>) -> String {
        var text: [UInt8] = []
        for (name, value) in labels {
            if !text.isEmpty { text.append(UInt8(ascii: ",")) }
            text += name.utf8
            text += #"=""#.utf8
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): text += #"\\"#.utf8
                case UInt8(ascii: "\""): text += #"\""#.utf8
                case UInt8(ascii: "\n"): text += #"\n"#.utf8
                default: text.append(byte)
                }
            }
            text.append(UInt8(ascii: "\""))
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension Metrics {
    /// Herald's metrics, named as in SPEC §8.
    public static func herald() -> Metrics {
        Metrics([
            Family("herald_ingested_messages_total", .counter, "Messages accepted and committed, per app."),
            Family("herald_deliveries_total", .counter,
                   "Delivery attempts by outcome (delivered, retry, dead, dropped, released), per app."),
            Family("herald_fcm_requests_total", .counter,
                   "Requests to FCM by HTTP status or transport failure, per app."),
            Family("herald_fcm_request_seconds", .histogram, "Duration of requests to FCM."),
            Family("herald_fcm_connections", .gauge, "Connections open to FCM, per app (refreshed every second)."),
            Family("herald_connections_opened_total", .counter, "HTTP/2 connections opened to the provider, per app."),
            Family("herald_connections_closed_total", .counter,
                   "HTTP/2 connections closed, per app and cause (connect, reset, goaway, ping_timeout, idle, "
                       + "protocol_error, shutdown)."),
            Family("herald_pings_total", .counter, "HTTP/2 PINGs sent to quiet or suspect connections, per app."),
            Family("herald_requests_retried_after_connection_loss_total", .counter,
                   "Requests in flight on a connection that was lost, or that timed out: they may have reached the "
                       + "provider and are sent again, per app."),
            Family("herald_queue_depth", .gauge, "Deliveries per app and state (refreshed every few seconds)."),
            Family("herald_oldest_ready_seconds", .gauge, "Age of the oldest delivery ready to send, per app."),
            Family("herald_scheduled_messages", .gauge,
                   "Messages waiting for their send_at (not cancelled), per app (refreshed every few seconds)."),
            Family("herald_tokens_deleted_total", .counter, "Tokens deleted after NotRegistered, per app."),
            Family("herald_tokens_replaced_total", .counter, "Tokens replaced by their canonical id, per app."),
            Family("herald_app_paused", .gauge, "1 while the app is paused."),
            Family("herald_outcome_webhook_lag_seconds", .gauge,
                   "Age of the oldest outcome an outcome webhook has not had acknowledged yet (0: none), per webhook."),
            Family("herald_outcome_webhook_requests_total", .counter,
                   "Requests to outcome webhooks by HTTP status or transport failure, per webhook."),
            Family("herald_outcome_webhook_skipped_total", .counter,
                   "Outcomes an outcome webhook gave up on when the feed's retention passed them, per webhook."),
        ])
    }
}
