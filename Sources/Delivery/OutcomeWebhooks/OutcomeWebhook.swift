import OAuth
import Queue

/// One outcome webhook as configured (SPEC §23): where the feed's outcomes go, signed with which secret, which
/// states, for which apps.
public struct OutcomeWebhook: Sendable {
    /// Which apps' outcomes it carries.
    public enum Scope: Sendable, Equatable {
        /// An app's own (`outcome_webhook` in its `apps` entry).
        case app(String)
        /// The config file's top-level one: every app without a webhook of its own.
        case serviceWide(excluding: Set<String>)
    }

    public var scope: Scope
    public var url: String
    public var secret: WebhookSecret
    /// The states sent; the others are passed over.
    public var events: Set<DeliveryState>

    /// Every final state: what `events` is when the config names none.
    public static let allEvents: Set<DeliveryState> = [.delivered, .dead, .dropped]

    public init(scope: Scope, url: String, secret: WebhookSecret, events: Set<DeliveryState> = allEvents) {
        (self.scope, self.url, self.secret, self.events) = (scope, url, secret, events)
    }

    /// Its row in `outcome_webhooks`: the app's name, or `*` for the service-wide one.
    public var name: String {
        switch scope {
        case .app(let app): app
        case .serviceWide: OutcomeWebhookState.serviceWide
        }
    }

    /// The app the feed is read for (an index range), nil for the service-wide webhook.
    var app: String? {
        if case .app(let app) = scope { app } else { nil }
    }

    /// Whether an outcome read from the feed goes to this webhook.
    func carries(_ outcome: OutcomeRecord) -> Bool {
        guard events.contains(outcome.state) else { return false }
        switch scope {
        case .app(let app): return outcome.app == app
        case .serviceWide(let excluded): return !excluded.contains(outcome.app)
        }
    }
}
