import Foundation
import OAuth
import Support

/// An HMS Push Kit app's configuration (SPEC §21), from its `apps` entry:
/// `{"name", "provider": "hms", "app_id", "client_id"?, "client_secret_file", "endpoint"?, "token_uri"?}`.
///
/// `client_id` defaults to `app_id`: an AppGallery app's OAuth client id is its app id, as Huawei's server demos use
/// one number for both. The secret is read by `loadSecret` at start, held in memory only, never logged.
///
/// ```swift
/// var settings = try HMSSettings(entry, app: "huawei", directory: "/etc/herald")
/// try settings.loadSecret(app: "huawei")
/// ```
public struct HMSSettings: Sendable {
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// The `apps` entry's keys of an HMS app, besides the common ones (`endpoint` among them).
    public static let keys: Set = ["app_id", "client_id", "client_secret_file", "token_uri"]
    public static let defaultEndpoint = "https://push-api.cloud.huawei.com"
    public static let defaultTokenURI = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    public var appID: String
    public var clientID: String
    public var clientSecretFile: String
    public var tokenURI: String
    /// Read by `loadSecret`, or the sandbox's throw-away one.
    public var clientSecret: String?

    public init(_ entry: JSON, app: String, directory: String?) throws(Invalid) {
        func text(_ key: String, required: Bool) throws(Invalid) -> String? {
            guard let value = entry[key] else {
                if required { throw Invalid(description: "HMS app \"\(app)\" needs \"\(key)\"") }
                return nil
            }
            guard let string = value.stringValue, !string.isEmpty else {
                throw Invalid(description: "HMS app \"\(app)\": \"\(key)\" must be a non-empty string")
            }
            return string
        }
        appID = try text("app_id", required: true)!
        clientID = try text("client_id", required: false) ?? appID
        for (key, value) in [("app_id", appID), ("client_id", clientID)]
        where value.utf8.count > 64 || !value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            throw Invalid(description: """
                HMS app "\(app)": \(key) must be the app's number from AppGallery Connect (digits), got "\
                \(value.prefix(100))"
                """)
        }
        let path = try text("client_secret_file", required: true)!
        clientSecretFile = directory.map { Self.resolve(path, against: $0) } ?? path
        tokenURI = try text("token_uri", required: false) ?? Self.defaultTokenURI
        var urls = [("token_uri", tokenURI)]
        if let endpoint = try text("endpoint", required: false) { urls.append(("endpoint", endpoint)) }
        for (key, url) in urls {
            do {
                try ServiceAccount.checkURL(url, name: key, source: "HMS app \"\(app)\"")
            } catch {
                throw Invalid(description: error.description)
            }
        }
    }

    /// `--sandbox`'s: the built-in simulator's HMS side, with a throw-away secret `Service` makes.
    public static func sandboxed(secret: String) -> HMSSettings {
        HMSSettings(appID: "10000001", clientSecret: secret)
    }

    private init(appID: String, clientSecret: String) {
        (self.appID, clientID, clientSecretFile, tokenURI) = (appID, appID, "", Self.defaultTokenURI)
        self.clientSecret = clientSecret
    }

    /// Reads the client secret, whitespace around it ignored (a file written by `echo` ends in a newline).
    public mutating func loadSecret(app: String) throws(Invalid) {
        guard let data = FileManager.default.contents(atPath: clientSecretFile),
              let text = String(data: data, encoding: .utf8)
        else { throw Invalid(description: "HMS app \"\(app)\": cannot read client_secret_file \(clientSecretFile)") }
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty, !secret.contains(where: \.isNewline) else {
            throw Invalid(description: """
                HMS app "\(app)": \(clientSecretFile) must hold the app's client secret (one line, from AppGallery \
                Connect's app information)
                """)
        }
        clientSecret = secret
    }

    /// The client credentials grant (RFC 6749 §4.4) Huawei's token endpoint takes, form-encoded.
    public static func grant(clientID: String, clientSecret: String) -> String {
        "grant_type=client_credentials&client_id=" + formEncoded(clientID) + "&client_secret="
            + formEncoded(clientSecret)
    }

    private static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// RFC 3986's unreserved characters: everything else is percent-encoded.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static func resolve(_ path: String, against directory: String) -> String {
        path.hasPrefix("/") ? path : URL(fileURLWithPath: directory).appendingPathComponent(path).path
    }
}
