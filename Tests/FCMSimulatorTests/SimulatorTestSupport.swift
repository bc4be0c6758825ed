import APNsSimulator
import FCMLegacySimulator
import FCMSimulator
import FCMV1Simulator
import Foundation
import HMSSimulator
import HTTP
import Support
import Testing
import TestSupport
import WebPushSimulator

struct NoResponse: Error, CustomStringConvertible {
    var description: String { "the simulator did not answer" }
}

extension FCMSimulator {
    /// The simulator as `herald fcm-sim` serves it: the shell with every provider's side, in the list's order.
    static func everySide(
        _ configuration: Configuration = .init(), serverKey: String? = nil, v1: FCMV1Simulator = FCMV1Simulator(),
        apns: APNsSimulator = APNsSimulator()
    ) -> FCMSimulator {
        FCMSimulator(configuration: configuration, sides: [
            v1, FCMLegacySimulator(serverKey: serverKey), apns, WebPushSimulator(), HMSSimulator(),
        ])
    }

    /// Calls the handler as the server would and returns its answer, waiting for a slow one.
    func call(_ method: String, _ target: String, headers: [(name: String, value: String)] = [], body: String = "")
        throws -> HTTPResponse
    {
        try call(method, target, headers: headers, bytes: Array(body.utf8))
    }

    func call(_ method: String, _ target: String, headers: [(name: String, value: String)] = [], bytes: [UInt8])
        throws -> HTTPResponse
    {
        let responder = WaitingResponder()
        let request = HTTPRequest(method: method, target: target, headers: headers, body: bytes)
        handle(request, responder: responder)
        guard let answer = responder.answer(within: 10) else { throw NoResponse() }
        return answer.response
    }

    /// `POST /fcm/send` with a JSON body and a key.
    func sendJSON(_ body: String, authorization: String? = "key=test-key") throws -> HTTPResponse {
        var headers: [(name: String, value: String)] = [("content-type", "application/json")]
        if let authorization { headers.append(("authorization", authorization)) }
        return try call("POST", "/fcm/send", headers: headers, body: body)
    }

    /// `POST /fcm/send` with a JSON value as the body.
    func sendJSON(_ message: JSON) throws -> HTTPResponse {
        try sendJSON(message.serialized())
    }

    /// `POST /fcm/send` as plain text (form-encoded).
    func sendPlain(_ body: String, contentType: String? = "application/x-www-form-urlencoded;charset=UTF-8")
        throws -> HTTPResponse
    {
        var headers: [(name: String, value: String)] = [("authorization", "key=test-key")]
        if let contentType { headers.append(("content-type", contentType)) }
        return try call("POST", "/fcm/send", headers: headers, body: body)
    }

    func control(_ body: String) throws -> HTTPResponse {
        try call("POST", "/control", headers: [("content-type", "application/json")], body: body)
    }

    /// The single result of a one-token JSON send.
    func result(for token: String) throws -> JSON {
        let reply = try sendJSON(.object([("to", .string(token))])).json()
        guard let result = reply["results"]?.arrayValue?.first else { throw NoResponse() }
        return result
    }
}

extension HTTPResponse {
    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> JSON { try JSON.parse(body) }
}

extension JSON {
    var keys: [String] { objectValue?.map(\.key) ?? [] }
}

/// What one recipient should get.
enum Expected: Sendable, Equatable, CustomTestStringConvertible {
    case delivered
    case canonical(String)
    case error(String)

    var testDescription: String {
        switch self {
        case .delivered: "delivered"
        case .canonical(let token): "canonical \(token)"
        case .error(let code): code
        }
    }
}

/// The result's meaning in a JSON reply, or nil when its shape is not one FCM gives.
func meaning(of result: JSON) -> Expected? {
    switch (result.keys, result["message_id"]?.stringValue, result["registration_id"]?.stringValue) {
    case (["message_id"], let id?, nil) where id.hasPrefix("0:"): .delivered
    case (["message_id", "registration_id"], let id?, let token?) where id.hasPrefix("0:"): .canonical(token)
    case (["error"], nil, nil): result["error"]?.stringValue.map(Expected.error)
    default: nil
    }
}

/// The meaning of a plain-text reply: `id=...` (and `registration_id=...`), `Error=...`, or a 500 for Unavailable.
func meaning(ofPlain response: HTTPResponse) -> Expected? {
    if response.status == 500 && response.body.isEmpty { return .error("Unavailable") }
    guard response.status == 200 else { return nil }
    let lines = response.text.split(separator: "\n", omittingEmptySubsequences: false)
    switch lines.count {
    case 1 where lines[0].hasPrefix("id=0:"): return .delivered
    case 1 where lines[0].hasPrefix("Error="): return .error(String(lines[0].dropFirst("Error=".count)))
    case 2 where lines[0].hasPrefix("id=0:") && lines[1].hasPrefix("registration_id="):
        return .canonical(String(lines[1].dropFirst("registration_id=".count)))
    default: return nil
    }
}
