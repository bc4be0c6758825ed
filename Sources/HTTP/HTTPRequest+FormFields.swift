import Foundation

extension HTTPRequest {
    /// The body's `application/x-www-form-urlencoded` fields, percent-decoded with `+` as a space; the last value of a
    /// repeated name wins. Lenient, for the simulator's token endpoints (ingest reads forms strictly: `FormBody`).
    public var formFields: [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ bytes: ArraySlice<UInt8>) -> String {
                let plus = UInt8(ascii: "+")
                let spaced = String(decoding: bytes.map { $0 == plus ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
                return spaced.removingPercentEncoding ?? spaced
            }
            fields[decoded(parts[0])] = parts.count > 1 ? decoded(parts[1]) : ""
        }
        return fields
    }
}
