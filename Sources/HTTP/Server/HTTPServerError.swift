/// Why the server could not start, in words for the operator.
public struct HTTPServerError: Error, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
