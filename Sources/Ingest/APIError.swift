import Queue
import Support

/// An error a client sees: an HTTP status and `{"error":{"code":"...","message":"..."}}`.
///
/// `code` is stable and machine-readable — FCM's name where one fits, Herald's otherwise; `message` is for
/// humans and names the field and the rule it broke.
///
/// ```swift
/// let error = APIError.invalidTtl("time_to_live must be an integer in 0...2419200")
/// error.jsonBody  // {"error":{"code":"InvalidTtl","message":"time_to_live must be an integer in 0...2419200"}}
/// ```
public struct APIError: Error, Sendable, Equatable {
    /// The HTTP status: 400 for every validation error.
    public var status: Int
    public var code: String
    public var message: String

    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The response body as a value, for embedding (batch results).
    public var json: JSON {
        .object([("error", .object([("code", .string(code)), ("message", .string(message))]))])
    }

    /// The response body, always in step with `code` and `message`.
    public var jsonBody: String { json.serialized() }
}

// MARK: - Validation errors (FCM's names, status 400)

extension APIError {
    /// The body is not JSON, or not a JSON object.
    public static func invalidJSON(_ message: String) -> APIError {
        APIError(status: 400, code: "InvalidJson", message: message)
    }

    /// An unknown field, a field of the wrong type or value, or a malformed target.
    public static func invalidParameters(_ message: String) -> APIError {
        APIError(status: 400, code: "InvalidParameters", message: message)
    }

    /// No target, or an empty one.
    public static func missingRegistration(_ message: String) -> APIError {
        APIError(status: 400, code: "MissingRegistration", message: message)
    }

    public static func invalidTtl(_ message: String) -> APIError {
        APIError(status: 400, code: "InvalidTtl", message: message)
    }

    public static func invalidDataKey(_ message: String) -> APIError {
        APIError(status: 400, code: "InvalidDataKey", message: message)
    }

    public static func messageTooBig(_ message: String) -> APIError {
        APIError(status: 400, code: "MessageTooBig", message: message)
    }
}

// MARK: - Herald's errors

extension APIError {
    public static func unauthorized(_ message: String) -> APIError {
        APIError(status: 401, code: "Unauthorized", message: message)
    }

    /// A per-tenant API token outside its role or its apps (SPEC §22).
    public static func forbidden(_ message: String) -> APIError {
        APIError(status: 403, code: "Forbidden", message: message)
    }

    public static func notFound(_ message: String) -> APIError {
        APIError(status: 404, code: "NotFound", message: message)
    }

    public static func payloadTooLarge(_ message: String) -> APIError {
        APIError(status: 413, code: "PayloadTooLarge", message: message)
    }

    /// The app already used this `Idempotency-Key` for a different message within the window. Never names the other
    /// message: the key says nothing about who used it.
    public static func idempotencyConflict(_ conflict: IdempotencyConflict) -> APIError {
        APIError(status: 409, code: "IdempotencyConflict", message: conflict.description)
    }

    /// Too many wrong tokens came from the caller's address lately (`GuessThrottle`); its token was not looked at.
    /// The response carries `Retry-After`.
    public static func tooManyWrongTokens(retryAfterSeconds seconds: Int) -> APIError {
        APIError(
            status: 429, code: "TooManyRequests",
            message: "too many wrong tokens from this address; try again in \(seconds) s")
    }

    /// The caller should retry; the response carries `Retry-After`.
    public static func unavailable(_ message: String) -> APIError {
        APIError(status: 503, code: "Unavailable", message: message)
    }
}
