/// Rows of text in aligned columns, for the human output of the CLI (`--json` is for scripts).
///
/// ```swift
/// var table = TextTable(["APP", "QUEUED"], rightAligned: [1])
/// table.append(["default", "12"])
/// print(table.render())
/// // APP      QUEUED
/// // default      12
/// ```
struct TextTable {
    private let titles: [String]
    private let rightAligned: Set<Int>
    private(set) var rows: [[String]] = []

    init(_ titles: [String], rightAligned: Set<Int> = []) {
        self.titles = titles
        self.rightAligned = rightAligned
    }

    mutating func append(_ row: [String]) {
        precondition(row.count == titles.count, "a row needs one cell per column")
        rows.append(row)
    }

    var isEmpty: Bool { rows.isEmpty }

    /// The header and the rows, columns two spaces apart, without trailing spaces.
    func render() -> String {
        let all = [titles] + rows
        let widths = titles.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                let cell = row[column]
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return rightAligned.contains(column) ? padding + cell : cell + padding
            }
            .joined(separator: "  ")
            .trimmingTrailingSpaces()
        }
        .joined(separator: "\n")
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }

    /// At most `length` characters, the cut marked with "…" (tables only; `--json` keeps every value whole).
    func abbreviated(to length: Int) -> String {
        count <= length ? self : String(prefix(length - 1)) + "…"
    }
}
