import Ingest
import Support

func validate(_ text: String) -> Result<IncomingMessage, APIError> {
    MessageValidator.validate(body: Array(text.utf8))
}

/// The error code for `text`, or nil when it is valid.
func errorCode(_ text: String) -> String? {
    if case .failure(let error) = validate(text) { error.code } else { nil }
}

func errorCode(_ result: Result<IncomingMessage, APIError>) -> String? {
    if case .failure(let error) = result { error.code } else { nil }
}

func accepted(_ text: String) -> IncomingMessage? {
    try? validate(text).get()
}

/// A JSON body from a value, so tests can build large or exact payloads without string surgery.
func body(_ value: JSON) -> String {
    value.serialized()
}
