import APNs
import FCMLegacy
import FCMSimulator
import FCMV1
import HMS
import ProviderKit
import WebPush

/// Every provider Herald speaks, and the one place that names them all: `serve`'s configuration (which keys are
/// whose, what `"provider"` may say), its start-up checks, the sandbox, the apps' senders and what ingest refuses
/// for each app go through this list. Adding a provider is its folder (`Sources/Providers/<Name>/`, a
/// `ProviderDefinition` and its `AppSettings`), its targets in Package.swift, and one line here.
public enum ProviderList {
    /// In the order an `apps` entry without `"provider"` is matched against their keys (`inferred(from:)`), and
    /// the order an error lists them in.
    public static let all: [any ProviderDefinition] = [
        FCMV1Definition(),
        FCMLegacyDefinition(),
        APNsDefinition(),
        WebPushDefinition(),
        HMSDefinition(),
    ]

    /// The providers' sides of the simulator, in the list's order: what `herald fcm-sim` and the sandbox serve.
    public static var simulatorSides: [any SimulatorSide.Type] {
        all.compactMap(\.simulatorSide)
    }

    /// The provider whose `"provider"` text is `name`.
    public static func named(_ name: String) -> (any ProviderDefinition)? {
        all.first { $0.name == name }
    }

    /// For an `apps` entry without `"provider"`, as config files written before it had one: the first provider
    /// whose own keys the entry uses (`server_key`: FCM legacy), or nil when it uses none.
    public static func inferred(from keys: some Sequence<String>) -> (any ProviderDefinition)? {
        let keys = Set(keys)
        return all.first { !$0.keys.isDisjoint(with: keys) }
    }
}
