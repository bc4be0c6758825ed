import Queue

extension Connection {
    /// `run` with the arguments as an array, for statements whose number of parameters is decided at run time.
    @discardableResult
    public func run(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        let statement = try statement(sql)
        try statement.bind(arguments)
        while try statement.step() {}
        return changes
    }
}
