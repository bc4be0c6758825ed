import Testing

import Queue

/// Every command but `migrate` and `serve` works only on a schema exactly this binary's, on any engine.
@Suite struct SchemaRequirementTests {
    @Test(arguments: [
        (0, "has no Herald schema; run `herald migrate --db herald.db` first"),
        (6, "has schema version 6 but this herald needs 7; run `herald migrate --db herald.db`"),
        (8, "has schema version 8, newer than this herald's 7; upgrade herald"),
    ])
    func aSchemaOtherThanThisBinarysIsRefusedSayingWhatToDo(_ version: Int, _ message: String) {
        #expect {
            try DatabaseRequirementError.requireSchema(version: version, latest: 7, location: "herald.db")
        } throws: { error in
            "\(error)".hasPrefix("herald.db " + message)
        }
    }

    @Test func thisBinarysSchemaIsAccepted() throws {
        try DatabaseRequirementError.requireSchema(version: 7, latest: 7, location: "herald.db")
    }
}
