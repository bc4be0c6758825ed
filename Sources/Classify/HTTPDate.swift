/// Parses the three HTTP-date forms of RFC 9110 §5.6.7, all in GMT:
///
///     Sun, 06 Nov 1994 08:49:37 GMT    ; IMF-fixdate
///     Sunday, 06-Nov-94 08:49:37 GMT   ; obsolete RFC 850 form
///     Sun Nov  6 08:49:37 1994         ; obsolete asctime() form
///
/// Names are matched as the RFC spells them (case-sensitive). The weekday must be a valid name but is not checked
/// against the date. Hand-written rather than `DateFormatter`: pure, locale-free and safe on any thread.
enum HTTPDate {
    /// Seconds since the Unix epoch, or nil when `text` is none of the three forms or names an impossible date.
    /// `now` (Unix ms) resolves the RFC 850 form's two-digit year.
    static func unixSeconds(_ text: Substring, now: Int64) -> Int64? {
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        switch fields.count {
        case 6:  // IMF-fixdate
            guard fields[0].count == 4, fields[0].hasSuffix(","), shortDays.contains(String(fields[0].dropLast())),
                  let day = number(fields[1], digits: 2), let month = month(fields[2]),
                  let year = number(fields[3], digits: 4), fields[5] == "GMT" else { return nil }
            return seconds(year: year, month: month, day: day, time: fields[4])
        case 4:  // RFC 850
            guard fields[0].hasSuffix(","), longDays.contains(String(fields[0].dropLast())), fields[3] == "GMT"
            else { return nil }
            let date = fields[1].split(separator: "-", omittingEmptySubsequences: false)
            guard date.count == 3, let day = number(date[0], digits: 2), let month = month(date[1]),
                  let shortYear = number(date[2], digits: 2) else { return nil }
            return seconds(year: fullYear(shortYear, now: now), month: month, day: day, time: fields[2])
        case 5:  // asctime
            guard shortDays.contains(String(fields[0])), let month = month(fields[1]),
                  let day = number(fields[2], digits: 1...2), let year = number(fields[4], digits: 4)
            else { return nil }
            return seconds(year: year, month: month, day: day, time: fields[3])
        default:
            return nil
        }
    }

    // MARK: - Pieces

    private static let shortDays: Set<String> = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays: Set<String> = [
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    ]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func month(_ text: Substring) -> Int? {
        months.firstIndex(of: String(text)).map { $0 + 1 }
    }

    private static func number(_ text: Substring, digits: Int) -> Int? {
        number(text, digits: digits...digits)
    }

    private static func number(_ text: Substring, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.utf8.count) else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// `HH:MM:SS` on a valid date; second 60 is a leap second (RFC 9110 allows it).
    private static func seconds(year: Int, month: Int, day: Int, time: Substring) -> Int64? {
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let hour = number(parts[0], digits: 2), let minute = number(parts[1], digits: 2),
              let second = number(parts[2], digits: 2), hour < 24, minute < 60, second <= 60,
              day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        let days = daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day))
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// RFC 9110: a two-digit year more than 50 years in the future means the most recent past year with those
    /// last two digits.
    static func fullYear(_ shortYear: Int, now: Int64) -> Int {
        let currentYear = Int(civilYear(daysSinceEpoch: floorDivide(now, 86_400_000)))
        var year = currentYear - currentYear % 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return year
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's civil-calendar algorithms (http://howardhinnant.github.io/date_algorithms.html).

    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilYear(daysSinceEpoch: Int64) -> Int64 {
        let z = daysSinceEpoch + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        return yearOfEra + era * 400 + (shiftedMonth >= 10 ? 1 : 0)
    }

    /// Division rounding toward negative infinity, for dates before 1970; safe for `Int64.min`.
    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let quotient = a / b
        return a % b != 0 && (a < 0) != (b < 0) ? quotient - 1 : quotient
    }
}
