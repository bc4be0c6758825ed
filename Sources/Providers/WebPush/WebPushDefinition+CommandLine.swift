import ProviderKit

extension WebPushDefinition {
    public var title: String { "Web Push" }
    public var commands: [HeraldCommand] { [WebPushKeysCommand.command] }
}
