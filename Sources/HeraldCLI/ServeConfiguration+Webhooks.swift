import Delivery
import Foundation
import OAuth
import ProviderKit
import Queue
import Support

/// `outcome_webhook` (SPEC §23): in an `apps` entry for that app, and at the config file's top level for every app
/// without its own.
extension ServeConfiguration {
    static let outcomeWebhookKey = "outcome_webhook"

    /// The webhooks the config file sets: each app's own in the order of `apps`, then the top-level one.
    static func outcomeWebhooks(file: [(key: String, value: JSON)], directory: String?) throws -> [OutcomeWebhook] {
        var webhooks: [OutcomeWebhook] = []
        for (index, app) in (file.first(where: { $0.key == "apps" })?.value.arrayValue ?? []).enumerated() {
            guard let value = app[outcomeWebhookKey], let name = app["name"]?.stringValue else { continue }
            webhooks.append(
                try outcomeWebhook(value, scope: .app(name), source: "apps[\(index)] \"\(name)\"", directory: directory))
        }
        if let value = file.first(where: { $0.key == outcomeWebhookKey })?.value {
            let excluded = Set(webhooks.map(\.name))
            webhooks.append(
                try outcomeWebhook(
                    value, scope: .serviceWide(excluding: excluded), source: outcomeWebhookKey, directory: directory))
        }
        return webhooks
    }

    /// One `{"url", "secret_file", "events"?}`, its secret read and checked; `source` names it in errors.
    private static func outcomeWebhook(
        _ value: JSON, scope: OutcomeWebhook.Scope, source: String, directory: String?
    ) throws -> OutcomeWebhook {
        guard let object = value.objectValue else {
            throw Invalid(description: "\(source): \"\(outcomeWebhookKey)\" must be an object {\"url\", \"secret_file\"}")
        }
        if let unknown = object.first(where: { !["url", "secret_file", "events"].contains($0.key) }) {
            throw Invalid(description: "\(source): \(outcomeWebhookKey) has an unknown key \"\(unknown.key)\"")
        }
        guard let url = value["url"]?.stringValue, let parsed = URL(string: url),
              ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host?.isEmpty == false
        else {
            throw Invalid(description: "\(source): \(outcomeWebhookKey) needs a \"url\" (http:// or https://)")
        }
        guard var path = value["secret_file"]?.stringValue, !path.isEmpty else {
            throw Invalid(description: """
                \(source): \(outcomeWebhookKey) needs a "secret_file" (make one with herald webhook-secret --out FILE)
                """)
        }
        if let directory { path = AppEntry.resolve(path, against: directory) }
        let secret: WebhookSecret
        do {
            secret = try WebhookSecret(text: try String(contentsOfFile: path, encoding: .utf8))
        } catch let error as CryptoError {
            throw Invalid(description: "\(source): \(outcomeWebhookKey) secret_file \(path): \(error)")
        } catch {
            throw Invalid(description: "\(source): cannot read \(outcomeWebhookKey) secret_file \(path)")
        }
        let webhook = OutcomeWebhook(scope: scope, url: url, secret: secret)
        AppEntry.warnIfOthersCanRead(path, "the outcome webhook's secret file", app: webhook.name)
        var events = OutcomeWebhook.allEvents
        if let list = value["events"] {
            let names = list.arrayValue?.compactMap(\.stringValue) ?? []
            let states = names.compactMap { DeliveryState(rawValue: $0) }.filter(OutcomeWebhook.allEvents.contains)
            guard !states.isEmpty, states.count == list.arrayValue?.count else {
                throw Invalid(description: """
                    \(source): \(outcomeWebhookKey) "events" must be a non-empty list of "delivered", "dead", "dropped"
                    """)
            }
            events = Set(states)
        }
        return OutcomeWebhook(scope: scope, url: url, secret: secret, events: events)
    }
}
