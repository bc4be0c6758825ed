import Support

// MARK: - FCM HTTP v1 answers

extension FCMV1Simulator {
    /// An FCM v1 error as the simulator writes it: `{"error": {"code", "message", "status", "details"}}`.
    struct V1Error: Sendable, Equatable {
        var httpStatus: Int
        /// The canonical code name, `NOT_FOUND`, `INVALID_ARGUMENT`, …
        var status: String
        /// The `FcmError` detail's `errorCode`; nil for errors FCM answers without one (authentication, project).
        var errorCode: String?
        var message: String
        /// A `google.rpc.BadRequest` field violation on this field.
        var field: String?

        /// The v1 answer for a legacy token behaviour's code (`NotRegistered` → 404 `UNREGISTERED`, …); v1's own
        /// names (`UNREGISTERED`, `QUOTA_EXCEEDED`, …) answer as themselves; anything else is a 500 with that code.
        init(code: String) {
            switch code {
            case "NotRegistered", "UNREGISTERED":
                self.init(404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.")
            case "InvalidRegistration", "MissingRegistration", "INVALID_ARGUMENT":
                self.init(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
                          "The registration token is not a valid FCM registration token", field: "message.token")
            case "MismatchSenderId", "SENDER_ID_MISMATCH":
                self.init(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch")
            case "InvalidPackageName", "MessageTooBig", "InvalidDataKey", "InvalidTtl", "InvalidParameters",
                "InvalidJson":
                self.init(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument.")
            case "InvalidApnsCredential", "THIRD_PARTY_AUTH_ERROR":
                self.init(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service")
            case "Unavailable", "UNAVAILABLE":
                self.init(503, "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable.")
            case "InternalServerError", "INTERNAL":
                self.init(500, "INTERNAL", "INTERNAL", "Internal error encountered.")
            case "DeviceMessageRateExceeded", "TopicsMessageRateExceeded", "QUOTA_EXCEEDED":
                self.init(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED",
                          "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute'.")
            default:
                self.init(500, "INTERNAL", code, "Internal error encountered.")
            }
        }

        /// A request-level fault with this HTTP status.
        init(faultStatus status: Int) {
            switch status {
            case 429: self.init(code: "QUOTA_EXCEEDED")
            case 500: self.init(code: "INTERNAL")
            default:
                self.init(status, "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable.")
            }
        }

        static let unauthenticated = V1Error(
            401, "UNAUTHENTICATED", nil,
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
                + "valid authentication credential. "
                + "See https://developers.google.com/identity/sign-in/web/devconsole-project.")

        static func permissionDenied(project: String) -> V1Error {
            V1Error(403, "PERMISSION_DENIED", nil, "Permission 'cloudmessaging.messages.create' denied on resource "
                + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
        }

        static func invalid(_ invalid: V1Request.Invalid) -> V1Error {
            V1Error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", invalid.message, field: invalid.field)
        }

        init(_ httpStatus: Int, _ status: String, _ errorCode: String?, _ message: String, field: String? = nil) {
            self.httpStatus = httpStatus
            self.status = status
            self.errorCode = errorCode
            self.message = message
            self.field = field
        }

        var json: JSON {
            var details: [JSON] = []
            if let errorCode {
                details.append(.object([
                    ("@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError"), ("errorCode", .string(errorCode)),
                ]))
            }
            if let field {
                details.append(.object([
                    ("@type", "type.googleapis.com/google.rpc.BadRequest"),
                    ("fieldViolations", .array([
                        .object([("field", .string(field)), ("description", .string(message))]),
                    ])),
                ]))
            }
            var error: [(key: String, value: JSON)] = [
                ("code", .int(httpStatus)), ("message", .string(message)), ("status", .string(status)),
            ]
            if !details.isEmpty { error.append(("details", .array(details))) }
            return .object([("error", .object(error))])
        }
    }
}

