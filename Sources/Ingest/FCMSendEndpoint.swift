import HTTP
import Queue
import Support

/// `POST /fcm/send` (SPEC §3): FCM's legacy endpoint in front of Herald's queue, so a backend that uses an FCM
/// client library changes only its URL.
///
/// The request is read and checked by `FCMSendRequest`; what it accepts is stored exactly as `POST /v1/messages`
/// stores a message (one write job on the group-commit writer), and the answer — FCM's own format — is given only
/// after that commit. The normal pipeline then delivers it to the app named by `X-Herald-App` (default `default`;
/// for a per-tenant token, the token's only app).
/// Authorization (`key=<API token>`) is checked by `IngestAPI` before a request gets here.
///
/// | request | answer |
/// |---|---|
/// | unparsable JSON, unknown field, wrong JSON type, > 1000 tokens, bad `priority` | 400, reason as text |
/// | accepted | 200, a result per recipient: `message_id` `<message id>:<index>` or FCM's error code |
/// | database unavailable | 503 with `Retry-After` (FCM clients retry 5xx); nothing stored |
final class FCMSendEndpoint: Sendable {
    static let path = "/fcm/send"

    private let intake: MessageIntake

    init(intake: MessageIntake) {
        self.intake = intake
    }

    /// - Parameter app: the app it is for; nil for `default`.
    func handle(_ request: HTTPRequest, app: String?, responder: any HTTPResponder) {
        let send: FCMSendRequest
        switch FCMSendRequest.read(contentType: request.header("content-type"), body: request.body, app: app) {
        case .failure(let refusal):
            return responder.respond(Self.refused(refusal))
        case .success(let read):
            send = read
        }
        guard let message = send.message else { return responder.respond(send.answer(nil)) }
        intake.store(message.stored(idempotencyKey: nil)) { result in
            switch result {
            case .success(let accepted):
                responder.respond(send.answer(accepted))
            case .failure(let failure):
                Log.warn("storage unavailable", ["error": .string("\(failure)"), "endpoint": .string(Self.path)])
                responder.respond(.text(503, "Unavailable: the database is unavailable; retry later",
                                        headers: [("Retry-After", "1")]))
            }
        }
    }

    /// FCM answers a request it refuses with a status and a line of text for the developer; client libraries look
    /// only at the status.
    static func refused(_ refusal: APIError, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        .text(refusal.status, "\(refusal.code): \(refusal.message)", headers: headers)
    }

    /// As FCM answers a wrong server key. The key that was sent is never echoed.
    static let unauthorized = refused(.unauthorized(
        "the Authorization header must be key=<API token>, the token given to herald serve --api-token"))

    static let methodNotAllowed: HTTPResponse = {
        var response = refused(APIError(status: 405, code: "MethodNotAllowed", message: "\(path) takes POST only"))
        response.headers.append(("Allow", "POST"))
        return response
    }()
}
