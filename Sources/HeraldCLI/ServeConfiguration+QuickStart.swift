import ProviderKit
import ProviderList

extension ServeConfiguration {
    /// The quick-start flags that name a file (`--fcm-service-account`): relative to the config file's directory
    /// when given there.
    static let quickStartFiles = Set(
        ProviderList.all.flatMap { $0.quickStart?.flags ?? [] }.filter(\.isFile).map(\.name))

    /// The apps the providers' `serve` flags make or change (`--fcm-key`, `--apns-key-file`, …), each provider's in
    /// the list's order after the config file's `apps`. Two providers asked for one app are refused before either
    /// applies.
    static func applyQuickStart(
        _ flags: ServeFlagValues, to apps: inout [AppConfiguration], concurrency: Int?
    ) throws(Invalid) {
        var asked: [String: (flag: String, title: String)] = [:]
        for definition in ProviderList.all {
            guard let quickStart = definition.quickStart, try flags.nonEmpty(quickStart.on) != nil else { continue }
            let mine = (flag: quickStart.on, title: definition.title)
            if let other = asked[quickStart.app] {
                // In the flags' names' order, so the message reads the same whichever provider the list has first.
                let (first, second) = other.flag < mine.flag ? (other, mine) : (mine, other)
                throw Invalid(description: """
                    give app "\(quickStart.app)" either --\(first.flag) (\(first.title)) or --\(second.flag) \
                    (\(second.title)), not both
                    """)
            }
            asked[quickStart.app] = mine
        }
        for definition in ProviderList.all {
            guard let quickStart = definition.quickStart else { continue }
            let index = apps.firstIndex { $0.name == quickStart.app }
            guard let settings = try definition.quickStartSettings(flags, current: index.map { apps[$0].settings })
            else { continue }
            if let index {
                apps[index].settings = settings
            } else {
                apps.append(AppConfiguration(name: quickStart.app, settings: settings, concurrency: concurrency))
            }
        }
    }
}
