import Foundation
import PackagePlugin

/// Compiles the package's top-level `migrations/*.sql` into the Storage module.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appendingPathComponent("migrations")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [directory.path, output.path],
                inputFiles: files,
                outputFiles: [output]
            ),
        ]
    }
}
