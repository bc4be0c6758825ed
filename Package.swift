// swift-tools-version:6.0
import PackageDescription

/// Herald: a durable outbound push-delivery queue. No package dependencies: the toolchain's own modules
/// plus SQLite and libcurl through small system-library modules.
let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
    ],
    targets: [
        // MARK: - C libraries
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CLinux"),

        // MARK: - Pipeline stages
        .target(name: "Support"),
        .target(name: "HTTP", dependencies: ["CLinux", "Support"]),
        .target(name: "Storage", dependencies: ["CSQLite", "Support"], plugins: ["EmbedMigrations"]),
        .target(name: "Ingest", dependencies: ["Storage", "HTTP", "Support"]),
        .target(name: "Classify", dependencies: ["Support"]),
        .target(name: "FCMSimulator", dependencies: ["HTTP", "Support"]),
        .target(name: "Send", dependencies: ["CCurl", "Support"]),
        .target(name: "Delivery", dependencies: ["Storage", "Classify", "Send", "Support"]),
        .target(name: "HeraldCLI", dependencies: ["Ingest", "Storage", "HTTP", "Support", "FCMSimulator", "Delivery"]),
        .executableTarget(name: "herald", dependencies: ["HeraldCLI"]),

        // MARK: - Build tooling: migrations/*.sql are compiled into the binary
        .executableTarget(name: "EmbedMigrationsTool", path: "Sources/EmbedMigrationsTool"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["EmbedMigrationsTool"]),

        // MARK: - Tests
        .testTarget(name: "SupportTests", dependencies: ["Support"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage"]),
        .testTarget(name: "IngestTests", dependencies: ["Ingest"]),
        .testTarget(name: "ClassifyTests", dependencies: ["Classify", "Support"]),
        .testTarget(name: "FCMSimulatorTests", dependencies: ["FCMSimulator", "HTTP"]),
        .testTarget(name: "CurlTests", dependencies: ["CCurl"]),
        .testTarget(name: "DeliveryTests", dependencies: ["Delivery", "Storage", "Classify", "Send", "Support"]),
        .testTarget(name: "SendTests", dependencies: ["Send", "HTTP", "Support"]),
        .testTarget(name: "IntegrationTests", dependencies: ["HeraldCLI", "Support"]),
    ],
    swiftLanguageModes: [.v6]
)
