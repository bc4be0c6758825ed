import Classify
import Delivery
import Queue
import Send
import Support

/// FCM's legacy HTTP protocol: `Authorization: key=…`, one request per message and up to 1000 tokens.
public struct LegacyProvider: Provider {
    public let maxTargetsPerRequest = 1000

    public let app: String
    public let endpoint: String
    private let headers: [(name: String, value: String)]
    public let timeoutMillis: Int

    /// A multicast answer has a result per token, 1000 of them: a message id and perhaps a canonical token
    /// (~250 bytes) each, some 250 KB in all.
    public var maxResponseBytes: Int { 1 << 20 }

    public init(app: String, endpoint: String, serverKey: String, timeoutMillis: Int = 30_000) {
        self.app = app
        self.endpoint = endpoint
        self.headers = [("Content-Type", "application/json"), ("Authorization", "key=\(serverKey)")]
        self.timeoutMillis = timeoutMillis
    }

    /// `credential` is unused: the server key is in `headers`.
    public func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String? = nil, now: Int64
    ) -> [PreparedRequest] {
        let kind = message.targetKind
        return requestRuns(deliveries, kind: kind).map { chunk in
            let body = Self.body(for: message, targets: chunk.map(\.token), kind: kind, now: now)
            return PreparedRequest(
                app: app, message: message, deliveries: chunk,
                outbound: OutboundRequest(
                    url: endpoint, headers: headers, body: body, timeoutMillis: timeoutMillis,
                    keptResponseHeaders: Classifier.headersRead),
                kind: kind, format: .json)
        }
    }

    public func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification {
        switch result {
        case .response(let status, let headers, let body, _):
            Classifier.classify(
                status: status, headers: headers, body: body, targetCount: request.deliveries.count,
                kind: request.kind, format: request.format, now: now)
        case .failure(let failure):
            Classifier.transportFailure(reason: DeliveryReason(failure), targetCount: request.deliveries.count)
        }
    }

    /// The request body: the stored message (mapped down from v1 where it came so) with its target put back and
    /// `time_to_live` set to what remains.
    static func body(for message: ClaimedMessage, targets: [String], kind: TargetKind, now: Int64) -> [UInt8] {
        var members: [(key: String, value: JSON)] = []
        switch kind {
        case .tokens where targets.count == 1: members.append(("to", .string(targets[0])))
        case .tokens: members.append(("registration_ids", .array(targets.map(JSON.string))))
        case .topic: members.append(("to", .string(targets[0])))
        case .condition: members.append(("condition", .string(targets[0])))
        }
        let parsed = (try? JSON.parse(Array(message.payload.utf8))) ?? .object([])
        switch message.format {
        case .legacy:
            members += (parsed.objectValue ?? []).filter { $0.key != "time_to_live" }
        case .v1:
            members += LegacyMessage.members(fromV1: parsed)
            if message.dryRun { members.append(("dry_run", .bool(true))) }
        }
        members.append(("time_to_live", .int(Int64(message.remainingTTL(now: now)))))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(message.payload.utf8.count + 64 + targets.count * 160)
        JSON.object(members).append(to: &bytes)
        return bytes
    }
}
