import Ingest
import Queue
import Support

extension DeadLetterFilter {
    /// The fields a filter is written with, in a query (`?app=&reason=&since=&until=&token=&after=`) or in the
    /// `"filter"` object of a requeue or purge.
    static let fieldNames: Set<String> = ["app", "reason", "since", "until", "token", "after"]

    /// A filter from its fields: `since` a duration back from `now` (`15m`, `7d`) or a Unix time in milliseconds,
    /// `until` a Unix time in milliseconds, `after` the `next` of the previous page.
    static func parse(_ fields: [String: String], now: Int64, paging: Bool) -> Result<DeadLetterFilter, APIError> {
        func invalid(_ message: String) -> Result<DeadLetterFilter, APIError> {
            .failure(APIError(status: 400, code: "InvalidParameters", message: message))
        }
        if let unknown = fields.keys.sorted().first(where: { !fieldNames.contains($0) || (!paging && $0 == "after") }) {
            return invalid("unknown filter field \"\(unknown)\"")
        }
        var filter = DeadLetterFilter()
        for (name, value) in fields where !value.isEmpty {
            switch name {
            case "app": filter.app = value
            case "reason": filter.reason = value
            case "token": filter.token = value
            case "since":
                if let millis = DurationText.millis(value) {
                    filter.diedSince = now - millis
                } else if let time = Int64(value), time >= 0 {
                    filter.diedSince = time
                } else {
                    return invalid("since must be a duration (90s, 15m, 12h, 7d) or a Unix time in milliseconds")
                }
            case "until":
                guard let time = Int64(value), time >= 0 else {
                    return invalid("until must be a Unix time in milliseconds")
                }
                filter.diedUntil = time
            default:
                guard let cursor = DeadLetterCursor(text: value) else {
                    return invalid("after must be the \"next\" of the previous page")
                }
                filter.after = cursor
            }
        }
        return .success(filter)
    }

    /// The fields of a JSON object (strings or whole numbers) as `parse` reads them.
    static func fields(of object: JSON) -> [String: String]? {
        guard let members = object.objectValue else { return nil }
        var fields: [String: String] = [:]
        for (name, value) in members {
            if let text = value.stringValue {
                fields[name] = text
            } else if let number = value.int64Value {
                fields[name] = String(number)
            } else if !value.isNull {
                return nil
            }
        }
        return fields
    }

    /// The filter as the answers echo it, so a page can show what matched and loop with the same filter.
    var json: JSON {
        [
            "app": AdminJSON.optional(app),
            "reason": AdminJSON.optional(reason),
            "since": AdminJSON.optional(diedSince),
            "until": AdminJSON.optional(diedUntil),
            "token": AdminJSON.optional(token),
        ]
    }
}
