/// A request the simulator refuses with 400 and a plain-text reason: a `/control` body, a legacy send.
public struct BadRequest: Error, Sendable, Equatable {
    public var message: String

    public init(message: String) {
        self.message = message
    }
}
