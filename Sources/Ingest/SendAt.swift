import Support

/// `send_at` (SPEC §23): the earliest time a message may be sent, as an RFC 3339 date-time or Unix milliseconds. Every
/// ingest dialect reads it here and words the refusal in its own error shape.
///
/// ```swift
/// try SendAt.read(.string("2026-11-28T09:30:00.250+01:00"), now: now)  // 1795854600250
/// try SendAt.read(.int(1795854600250), now: now)                      // the same
/// ```
enum SendAt {
    /// How far ahead a message may be scheduled.
    static let maximumAheadMillis: Int64 = 30 * 86_400_000

    /// Unix milliseconds below this are taken for a mistake (seconds where milliseconds were meant: 1732190000 is
    /// a day of January 1970, not of November 2024) rather than for "now": 1973-03-03.
    static let earliestMillis: Int64 = 100_000_000_000

    /// What a dialect's refusal says after the field's name.
    static let expected = "an RFC 3339 date-time (2026-11-28T09:30:00Z) or Unix milliseconds"

    /// The time `value` names, in Unix milliseconds; a past one is returned as it is (the caller sends it now).
    /// - Throws: the reason, for the caller to prefix with the field's name: a value of the wrong type or form, or
    ///   one more than `maximumAheadMillis` after `now`.
    static func read(_ value: JSON, now: Int64) throws(Refusal) -> Int64 {
        let millis: Int64?
        if let number = value.int64Value {
            millis = number
        } else if let text = value.stringValue {
            millis = text.utf8.allSatisfy(isDigit) ? Int64(text) : rfc3339Millis(text)
        } else {
            millis = nil
        }
        guard let millis, millis >= earliestMillis else { throw Refusal(reason: "must be \(expected)") }
        guard millis - now <= maximumAheadMillis else {
            throw Refusal(reason: "is more than 30 days ahead; a message may be scheduled up to 30 days ahead")
        }
        return millis
    }

    struct Refusal: Error {
        var reason: String
    }

    // MARK: - RFC 3339

    /// `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)` (`t`, `z` and a space for `T` as RFC 3339 allows) → Unix
    /// milliseconds, a fraction cut to milliseconds; nil when it is not one.
    static func rfc3339Millis(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count, bytes[index..<index + digits].allSatisfy(isDigit) else { return nil }
            defer { index += digits }
            return bytes[index..<index + digits].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        func skip(_ allowed: String) -> Bool {
            guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), skip("-"), let month = number(2), skip("-"), let day = number(2),
              skip("Tt "), let hour = number(2), skip(":"), let minute = number(2), skip(":"), let second = number(2),
              (1...12).contains(month), (1...daysIn(month, of: year)).contains(day), hour < 24, minute < 60,
              second <= 60  // a leap second
        else { return nil }
        var millis = 0
        if skip(".") {
            let start = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            guard index > start else { return nil }
            for (place, digit) in bytes[start..<min(index, start + 3)].enumerated() {
                millis += Int(digit - UInt8(ascii: "0")) * [100, 10, 1][place]
            }
        }
        var offsetMinutes = 0
        if !skip("Zz") {
            guard index < bytes.count else { return nil }
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard skip("+-"), let hours = number(2), skip(":"), let minutes = number(2), hours < 24, minutes < 60
            else { return nil }
            offsetMinutes = sign * (hours * 60 + minutes)
        }
        guard index == bytes.count else { return nil }
        let seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
            - offsetMinutes * 60
        return Int64(seconds) * 1000 + Int64(millis)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
