import Foundation
import PackagePlugin

/// Compiles the package's migrations into the module that applies them: `migrations/*.sql` into Storage (SQLite)
/// as `embeddedMigrations`, `migrations/postgres/*.sql` into PostgreSQL as `embeddedPostgresMigrations`.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        var directory = context.package.directoryURL.appendingPathComponent("migrations")
        var variable = "embeddedMigrations"
        if target.name == "PostgreSQL" {
            directory = directory.appendingPathComponent("postgres")
            variable = "embeddedPostgresMigrations"
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations into \(target.name)",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [directory.path, output.path, variable],
                inputFiles: files,
                outputFiles: [output]
            ),
        ]
    }
}
