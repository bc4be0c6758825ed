import HTTP
import Queue
import Support

/// `POST /v1/projects/{project}/messages:send` (SPEC §3, §13): FCM HTTP v1's endpoint in front of Herald's queue, so
/// a backend on firebase-admin, pyfcm 2.x or any HTTP client changes only its URL.
///
/// The body is exactly FCM v1's request (`{"message": {...}, "validate_only": bool}`), checked by
/// `V1MessageValidator`; `{project}` picks the app (`IngestAPI` resolves it). What is accepted is stored as
/// `POST /v1/messages` stores it (one job on the group-commit writer), and the answer comes only after that commit,
/// in FCM's own shape, so the SDKs read it as they read Google's:
///
/// | request | answer |
/// |---|---|
/// | accepted | 200 `{"name": "projects/{project}/messages/{herald message id}"}` |
/// | invalid message or JSON | 400 `INVALID_ARGUMENT`, the message naming the field (SDKs: `InvalidArgumentError`) |
/// | wrong or missing `Authorization: Bearer <API token>` | 401 `UNAUTHENTICATED` |
/// | unknown project | 404 `NOT_FOUND` |
/// | an `Idempotency-Key` the app used within 24 h for a different message | 409 `ABORTED`; nothing stored |
/// | database behind or unavailable | 503 `UNAVAILABLE` with `Retry-After`; nothing stored |
final class FCMV1SendEndpoint: Sendable {
    private let intake: MessageIntake

    init(intake: MessageIntake) {
        self.intake = intake
    }

    /// `{project}` of `/v1/projects/{project}/messages:send` (the request's decoded path segments), or nil for any
    /// other path.
    static func project(in segments: [String]) -> String? {
        guard segments.count == 4, segments[0] == "v1", segments[1] == "projects", !segments[2].isEmpty,
              segments[3] == "messages:send"
        else { return nil }
        return segments[2]
    }

    /// Stores one request for `app`. `admit` refuses what the app cannot deliver (an `fid` or `webpush` for a
    /// legacy app).
    func handle(
        _ request: HTTPRequest, project: String, app: String, admit: (IncomingMessage) -> APIError?,
        responder: any HTTPResponder
    ) {
        let key = request.header("idempotency-key")
        if let key, key.isEmpty || key.utf8.count > 255 {
            return responder.respond(Self.response(V1MessageValidator.invalid(
                "Invalid value at header 'Idempotency-Key': 1 to 255 bytes.")))
        }
        let object: JSON
        do {
            object = try JSON.parse(request.body)
        } catch {
            return responder.respond(Self.response(V1MessageValidator.invalid(
                "Invalid JSON payload received. \(error)")))
        }
        var message: IncomingMessage
        switch V1MessageValidator.validate(object: object, heraldFields: false) {
        case .failure(let failure): return responder.respond(Self.response(failure))
        case .success(let valid): message = valid
        }
        message.app = app
        if let refusal = admit(message) { return responder.respond(Self.response(refusal)) }
        intake.store(message.stored(idempotencyKey: key)) { result in
            switch result {
            case .success(let accepted):
                let name = "projects/\(project)/messages/\(accepted.id)"
                responder.respond(.json(200, JSON.object([("name", .string(name))]).serialized()))
            case .failure(let conflict as IdempotencyConflict):
                // Not retryable: a 409 the SDKs raise as their own error, never another message's name.
                responder.respond(Self.response(.idempotencyConflict(conflict)))
            case .failure(let failure):
                Log.warn("storage unavailable", ["error": .string("\(failure)"), "endpoint": "fcm v1"])
                responder.respond(Self.unavailable)
            }
        }
    }

    // MARK: - Answers in FCM v1's shape

    /// FCM v1's error: `{"error": {"code": 400, "message", "status": "INVALID_ARGUMENT", "details": [{"@type":
    /// "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"}]}}`. The Admin SDKs
    /// pick their exception from `status`, or from `errorCode` when it is one of FCM's own; `details` is left out
    /// where FCM has no error code for the case (401, 404), as Google's answers leave it out.
    ///
    /// This is also the 401 that an authorization check in front of the handler must give for this path:
    /// `FCMV1SendEndpoint.response(.unauthorized("…"))`, or `unauthorized`.
    static func response(_ failure: APIError, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        let status = statusName(failure.status)
        var error: [(key: String, value: JSON)] = [
            ("code", .int(Int64(failure.status))), ("message", .string(failure.message)), ("status", .string(status)),
        ]
        if let errorCode = fcmErrorCode(failure.status) {
            error.append(("details", .array([.object([
                ("@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError"), ("errorCode", .string(errorCode)),
            ])])))
        }
        return .json(failure.status, JSON.object([("error", .object(error))]).serialized(), headers: headers)
    }

    /// As FCM answers a missing or wrong access token. The token that was sent is never echoed.
    static let unauthorized = response(.unauthorized(
        "Request had invalid authentication credentials. Expected Authorization: Bearer <API token>, the token "
            + "given to herald serve --api-token."))

    static let unavailable = response(
        .unavailable("The service is currently unavailable: the database cannot take the write; retry later."),
        headers: [("Retry-After", "1")])

    static func notFound(project: String) -> HTTPResponse {
        var quotedProject = ""
        appendJSONString(String(project.prefix(100)), to: &quotedProject)
        return response(.notFound(
            "Requested entity was not found: no app of this herald has project_id \(quotedProject)."))
    }

    static let methodNotAllowed: HTTPResponse = {
        var answer = response(
            APIError(status: 405, code: "MethodNotAllowed", message: "messages:send takes POST only."))
        answer.headers.append(("Allow", "POST"))
        return answer
    }()

    /// google.rpc.Code names for the statuses Herald answers.
    private static func statusName(_ status: Int) -> String {
        switch status {
        case 400, 413: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 405: "METHOD_NOT_ALLOWED"
        case 409: "ABORTED"
        case 429: "RESOURCE_EXHAUSTED"
        case 503: "UNAVAILABLE"
        default: "INTERNAL"
        }
    }

    /// FCM's own `FcmError.errorCode` where one fits.
    private static func fcmErrorCode(_ status: Int) -> String? {
        switch status {
        case 400, 413: "INVALID_ARGUMENT"
        case 429: "QUOTA_EXCEEDED"
        case 503: "UNAVAILABLE"
        case 500...599: "INTERNAL"
        default: nil
        }
    }
}
