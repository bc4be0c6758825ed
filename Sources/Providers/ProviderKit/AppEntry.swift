import Foundation
import Support

/// One entry of the config file's `apps`, as a provider's definition reads it: the entry's members, the app's name,
/// and the config file's directory, against which a relative path is read.
public struct AppEntry: Sendable {
    /// The keys every app has, whatever its provider.
    public static let commonKeys: Set = ["name", "provider", "endpoint", "concurrency", "max_rate"]

    public var json: JSON
    public var app: String
    public var directory: String?

    public init(json: JSON, app: String, directory: String?) {
        (self.json, self.app, self.directory) = (json, app, directory)
    }

    public subscript(_ key: String) -> JSON? { json[key] }

    /// A path from the entry, relative to the config file's directory.
    public func path(_ key: String) -> String? {
        self[key]?.stringValue.map { path in directory.map { AppEntry.resolve(path, against: $0) } ?? path }
    }

    /// `path` relative to `directory` unless absolute.
    public static func resolve(_ path: String, against directory: String) -> String {
        path.hasPrefix("/") ? path : URL(fileURLWithPath: directory).appendingPathComponent(path).path
    }
}

/// A configuration `herald serve` refuses to start with, saying what to fix.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
    public init(description: String) { self.description = description }
}
