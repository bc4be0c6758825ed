import Foundation

/// The few JSON shapes the classifier reads, with integers kept apart from strings and from other numbers
/// (a topic reply's `message_id` is a JSON integer, a multicast result's is a string).
///
/// Parsing sits behind `JSONValue.parse` alone, so Herald's own JSON type can replace Foundation here later.
enum JSONValue: Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    /// An integer literal, as its decimal text: FCM's ids may exceed `Int64`.
    case integer(String)
    /// A number with a fraction or an exponent.
    case number(Double)
    case bool(Bool)
    case null

    /// The document in `bytes`, or nil for anything that is not JSON (invalid UTF-8, truncation, nesting deeper
    /// than Foundation's limit of 512 levels). Never traps.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
            return nil
        }
        return JSONValue(foundation: object)
    }

    private init?(foundation value: Any) {
        switch value {
        case let string as String:
            self = .string(string)
        case is NSNull:
            self = .null
        case let decimal as NSDecimalNumber:
            // Integers beyond UInt64 arrive as NSDecimalNumber; keep their exact digits.
            let text = decimal.stringValue
            let digits = text.utf8.drop { $0 == UInt8(ascii: "-") }
            if !digits.isEmpty && digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
                self = .integer(text)
            } else {
                self = .number(decimal.doubleValue)
            }
        case let number as NSNumber:
            // `is Bool` also matches the numbers 0 and 1 on Linux; the ObjC type code tells them apart.
            switch String(cString: number.objCType) {
            case "c", "B": self = .bool(number.boolValue)
            case "f", "d": self = .number(number.doubleValue)
            default: self = .integer(number.stringValue)
            }
        case let array as [Any]:
            var elements: [JSONValue] = []
            elements.reserveCapacity(array.count)
            for element in array {
                guard let converted = JSONValue(foundation: element) else { return nil }
                elements.append(converted)
            }
            self = .array(elements)
        case let dictionary as [String: Any]:
            var fields: [String: JSONValue] = [:]
            fields.reserveCapacity(dictionary.count)
            for (key, element) in dictionary {
                guard let converted = JSONValue(foundation: element) else { return nil }
                fields[key] = converted
            }
            self = .object(fields)
        default:
            return nil
        }
    }
}
