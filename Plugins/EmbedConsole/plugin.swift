import Foundation
import PackagePlugin

/// Compiles the operator console's page (`console/*.html`, `*.css`, `*.js`) into the `Console` module as
/// `embeddedConsoleAssets`, the way `EmbedMigrations` compiles the schema: the binary serves the page itself, with
/// no files to install beside it and no network or Node build step.
@main
struct EmbedConsole: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appendingPathComponent("console")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".html") || $0.hasSuffix(".css") || $0.hasSuffix(".js") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedConsoleAssets.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) console files into \(target.name)",
                executable: try context.tool(named: "EmbedConsoleTool").url,
                arguments: [directory.path, output.path],
                inputFiles: files,
                outputFiles: [output]
            ),
        ]
    }
}
