import FCMSimulator
import Foundation
import ProviderKit
import ProviderList
import Support
import Testing

/// The list every provider joins by: what it says of each must hold for all of them.
@Suite struct ProviderListTests {
    /// A provider's own reason codes are stored as they are and read back as the same reason: none is the text of a
    /// reason of Herald's own, nor another provider's code.
    @Test func everyProvidersReasonCodesRoundTripThroughTheirStoredText() {
        var seen: [String: String] = [:]
        for provider in ProviderList.all {
            for code in provider.reasonCodes {
                #expect(DeliveryReason(stored: code) == .other(code), "\(provider.name): \(code) is a shared reason")
                #expect(DeliveryReason(stored: code).rawValue == code)
                #expect(seen[code] == nil, "\(code) is both \(seen[code] ?? "")'s and \(provider.name)'s")
                seen[code] = provider.name
            }
        }
        #expect(ProviderList.named("fcm-v1")?.reasonCodes.contains("QUOTA_EXCEEDED") == true)
        #expect(ProviderList.named("apns")?.reasonCodes.contains("BadDeviceToken") == true)
        #expect(ProviderList.named("hms")?.reasonCodes.contains("80300008") == true)
    }

    /// A key belongs to one provider, so a key on an app of another names whose it is, and an entry without
    /// `"provider"` is the provider of its keys. The one exception is `token_uri`, the OAuth token URL of FCM v1 and
    /// HMS alike (SPEC §21): an entry without `"provider"` that has no other key is FCM v1's, as before HMS.
    @Test func namesAreUniqueAndEachKeyIsOneProvidersOwn() {
        let shared: Set = ["token_uri"]
        let names = ProviderList.all.map(\.name)
        #expect(Set(names).count == names.count)
        for (index, provider) in ProviderList.all.enumerated() {
            #expect(provider.keys.isDisjoint(with: AppEntry.commonKeys), "\(provider.name)")
            #expect(provider.nonStringKeys.isSubset(of: provider.keys), "\(provider.name)")
            for other in ProviderList.all[(index + 1)...] {
                #expect(provider.keys.intersection(other.keys).isSubset(of: shared),
                        "\(provider.name) and \(other.name)")
            }
            #expect(ProviderList.named(provider.name)?.name == provider.name)
            for key in provider.keys.subtracting(shared) {
                #expect(ProviderList.inferred(from: ["name", key])?.name == provider.name, "\(key)")
            }
        }
        #expect(ProviderList.inferred(from: ["name", "token_uri"])?.name == "fcm-v1")
        #expect(ProviderList.named("hms")?.keys.contains("token_uri") == true)
        #expect(ProviderList.named("pigeon") == nil)
        #expect(ProviderList.inferred(from: ["name", "endpoint"]) == nil)
    }

    /// Every provider has its side of the simulator, and no two sides claim one flag, `/control` key or path: the
    /// shell routes to the first side that handles a request, and reads a flag or key for the one side that owns it.
    @Test func everyProviderHasASimulatorSideOwningItsFlagsKeysAndPaths() throws {
        let types = ProviderList.simulatorSides
        #expect(types.count == ProviderList.all.count)
        let flags = types.flatMap { $0.help.flags }
        #expect(Set(flags).count == flags.count, "a flag of two sides: \(flags)")
        let simulator = try FCMSimulator.parse(arguments: [], sides: types)
        let keys = simulator.sides.flatMap { $0.controlKeys }
        #expect(Set(keys).count == keys.count, "a /control key of two sides: \(keys)")
        for (index, side) in simulator.sides.enumerated() {
            for route in side.routes {
                let parts = route.split(separator: " ")
                let path = parts[1].replacingOccurrences(of: "{", with: "x").replacingOccurrences(of: "}", with: "")
                #expect(side.handles(method: String(parts[0]), path: path), "\(route) is its own")
                let others = simulator.sides.enumerated().filter { $0.offset != index }
                #expect(!others.contains { $0.element.handles(method: String(parts[0]), path: path) },
                        "\(route) is claimed by another side too")
            }
        }
    }
}
