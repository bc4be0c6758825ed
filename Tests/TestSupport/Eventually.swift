import Foundation
import Testing

/// Waits until `condition` holds, looking every 10 ms, and records an issue naming `what` when it never does. The
/// deadline only bounds a broken test: it asserts nothing about speed. Returns whether the condition held.
@discardableResult
public func eventually(
    _ what: String, deadline seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    Issue.record("gave up waiting: \(what)", sourceLocation: sourceLocation)
    return false
}
