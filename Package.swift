// swift-tools-version:6.0
import PackageDescription

/// Herald: a durable outbound push-delivery queue. No package dependencies: the toolchain's own modules
/// plus SQLite, libpq, libcurl and OpenSSL (libcrypto, libssl) through small system-library modules.
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
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // TLS and HTTP/2 (framing, HPACK, flow control) for Herald's own HTTP/2 client (Send/HTTP2: FCM v1, APNs,
        // Web Push), and for the HTTPS server in front of the simulator (HTTP/TLS).
        .systemLibrary(name: "CSSL", pkgConfig: "libssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // epoll, eventfd and accept4, which the Glibc module leaves out: for Posix (the server's loops and the
        // sender pools' `Poller`).
        .systemLibrary(name: "CLinux"),

        // MARK: - Pipeline stages
        .target(name: "Support"),
        // epoll, eventfd, getaddrinfo and system calls, wrapped once for the server (HTTP) and the clients (Send).
        .target(name: "Posix", dependencies: ["CLinux"]),
        // A non-blocking TLS stream (OpenSSL's handshake, reads, writes, close_notify, error texts) and the libnghttp2
        // session setup, written once for the HTTP/2 client (Send) and the HTTPS server (HTTP).
        .target(name: "TLS", dependencies: ["CNGHTTP2", "CSSL", "Posix"]),
        // The HTTP/1.1 server, and the HTTPS one (TLS, HTTP/2 by libnghttp2 and HTTP/1.1) that serves the simulator.
        .target(name: "HTTP", dependencies: ["CNGHTTP2", "CSSL", "Posix", "Support", "TLS"]),
        // The queue: its types, the storage interface (Store, QueueStore) and the rules written once over it.
        .target(name: "Queue", dependencies: ["Support"]),
        // SQLite: the embedded engine's translation of the storage interface.
        .target(name: "Storage", dependencies: ["CSQLite", "Queue", "Support"], plugins: ["EmbedMigrations"]),
        // PostgreSQL through libpq: connections, prepared statements, LISTEN/NOTIFY, its own migrations, and the
        // queue's operations in PostgreSQL's SQL (PGQueueStore conforms to Queue's Store). The rules are Queue's; it
        // knows nothing of SQLite.
        .target(
            name: "PostgreSQL", dependencies: ["CLibPQ", "Queue", "Support"], plugins: ["EmbedMigrations"]),
        .target(name: "Ingest", dependencies: ["Queue", "HTTP", "OAuth", "Posix", "Support"]),
        // The operator console (SPEC §18): its JSON API under /v1/admin/ and its page, compiled into the binary.
        .target(name: "Console", dependencies: ["Ingest", "Queue", "HTTP", "Support"], plugins: ["EmbedConsole"]),
        // Reads a request's TargetKind, a type of the queue's.
        .target(name: "Classify", dependencies: ["Queue", "Support"]),
        // Service-account keys, RS256 and JWTs: what Delivery signs and the simulator checks; P-256 keys, ES256 and
        // ECDH (APNs, Web Push), AES-GCM and HKDF (Web Push, the secrets key), HMAC-SHA-256 (webhooks).
        .target(name: "OAuth", dependencies: ["CCrypto", "Support", "TLS"]),
        // The simulator's shell (`herald fcm-sim`, the sandbox's stand-in): it routes to the providers' sides it is
        // given (each in its provider's folder) and keeps what they share: token behaviours, faults, stats, TLS front.
        .target(name: "FCMSimulator", dependencies: ["HTTP", "Support"]),
        .target(name: "Send", dependencies: ["CCurl", "CNGHTTP2", "CSSL", "Posix", "Support", "TLS"]),
        .target(name: "Delivery", dependencies: ["Queue", "Classify", "Send", "OAuth", "Posix", "Support"]),

        // MARK: - Providers: one folder each, on the shared layers above; none of those depends on one
        // What a provider's folder gives the list: its definition (name, keys, reason codes; serve's quick-start flags
        // and its own commands) and an app's settings (checks, sandbox wiring, sender, what ingest refuses).
        .target(
            name: "ProviderKit", dependencies: ["Delivery", "FCMSimulator", "Ingest", "OAuth", "Send", "Support"],
            path: "Sources/Providers/ProviderKit"),
        // A provider's side of the simulator sits in its folder's Simulator/, a target on the shell (FCMSimulator) and
        // the shared layers only; the provider's target depends on it for its sandbox wiring, never the other way.
        .target(
            name: "FCMLegacy",
            dependencies: [
                "ProviderKit", "Delivery", "Classify", "FCMLegacySimulator", "FCMSimulator", "Ingest", "Send", "Queue",
                "Support",
            ],
            path: "Sources/Providers/FCMLegacy", exclude: ["Simulator"]),
        .target(
            name: "FCMLegacySimulator", dependencies: ["FCMSimulator", "HTTP", "Support"],
            path: "Sources/Providers/FCMLegacy/Simulator"),
        .target(
            name: "FCMV1",
            dependencies: [
                "ProviderKit", "Delivery", "Classify", "FCMSimulator", "FCMV1Simulator", "Ingest", "Send", "OAuth",
                "Queue", "Support",
            ],
            path: "Sources/Providers/FCMV1", exclude: ["Simulator"]),
        .target(
            name: "FCMV1Simulator", dependencies: ["FCMSimulator", "HTTP", "OAuth", "Support"],
            path: "Sources/Providers/FCMV1/Simulator"),
        .target(
            name: "APNs",
            dependencies: [
                "ProviderKit", "APNsSimulator", "Delivery", "Classify", "FCMSimulator", "Ingest", "Send", "OAuth",
                "Queue", "Support",
            ],
            path: "Sources/Providers/APNs", exclude: ["Simulator"]),
        .target(
            name: "APNsSimulator", dependencies: ["FCMSimulator", "HTTP", "OAuth", "Support"],
            path: "Sources/Providers/APNs/Simulator"),
        .target(
            name: "WebPush",
            dependencies: [
                "ProviderKit", "Delivery", "Classify", "FCMSimulator", "Ingest", "Send", "OAuth", "Posix", "Queue",
                "Support", "WebPushCrypto", "WebPushSimulator",
            ],
            path: "Sources/Providers/WebPush", exclude: ["Crypto", "Simulator"]),
        // Web Push's message encryption (RFC 8291) and VAPID (RFC 8292), on the subscriptions ingest reads.
        .target(
            name: "WebPushCrypto", dependencies: ["Ingest", "OAuth", "Support"],
            path: "Sources/Providers/WebPush/Crypto"),
        .target(
            name: "WebPushSimulator",
            dependencies: ["FCMSimulator", "HTTP", "Ingest", "OAuth", "Support", "WebPushCrypto"],
            path: "Sources/Providers/WebPush/Simulator"),
        .target(
            name: "HMS",
            dependencies: [
                "ProviderKit", "Delivery", "Classify", "FCMSimulator", "HMSSimulator", "Ingest", "Send", "OAuth",
                "Queue", "Support",
            ],
            path: "Sources/Providers/HMS", exclude: ["Simulator"]),
        .target(
            name: "HMSSimulator", dependencies: ["FCMSimulator", "HTTP", "Support"],
            path: "Sources/Providers/HMS/Simulator"),
        // The one place that names every provider (and so every side of the simulator).
        .target(
            name: "ProviderList",
            dependencies: ["ProviderKit", "FCMLegacy", "FCMSimulator", "FCMV1", "APNs", "WebPush", "HMS"],
            path: "Sources/Providers/ProviderList"),

        // MARK: - The command line
        .target(
            name: "HeraldCLI",
            dependencies: [
                "Ingest", "Console", "Queue", "Storage", "PostgreSQL", "HTTP", "Support", "FCMSimulator", "Delivery",
                "Send", "OAuth", "ProviderKit", "ProviderList",
            ]),
        .executableTarget(name: "herald", dependencies: ["HeraldCLI"]),

        // MARK: - Build tooling: migrations/*.sql and the console's page are compiled into the binary
        .executableTarget(name: "EmbedMigrationsTool", path: "Sources/EmbedMigrationsTool"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["EmbedMigrationsTool"]),
        .executableTarget(name: "EmbedConsoleTool", path: "Sources/EmbedConsoleTool"),
        .plugin(name: "EmbedConsole", capability: .buildTool(), dependencies: ["EmbedConsoleTool"]),

        // MARK: - Tests
        // What test targets share: waiting for a condition or a handler's answer, a count and a value behind a lock
        // for other threads, a temporary directory, a raw HTTP/1.1 client (not a test target).
        .target(name: "TestSupport", dependencies: ["HTTP"], path: "Tests/TestSupport"),
        .testTarget(name: "SupportTests", dependencies: ["Support"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "Posix", "NetworkTestSupport", "TestSupport"]),
        .testTarget(name: "QueueTests", dependencies: ["Queue", "Support"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "Queue", "Support", "TestSupport"]),
        // The throw-away PostgreSQL server of the tests that need one, and a schema of its own per test (not a test
        // target: shared by two).
        .target(name: "PostgreSQLTestSupport", dependencies: ["PostgreSQL"], path: "Tests/PostgreSQLTestSupport"),
        // The queue's rules through the storage interface, the same tests on every engine: SQLite always, PostgreSQL
        // where HERALD_TEST_POSTGRES_URL names a server (scripts/test starts one).
        .testTarget(
            name: "QueueStoreTests",
            dependencies: ["PostgreSQL", "PostgreSQLTestSupport", "Queue", "Storage", "Support", "TestSupport"]),
        .testTarget(
            name: "PostgreSQLTests",
            dependencies: ["PostgreSQL", "PostgreSQLTestSupport", "Queue", "Storage", "Support", "TestSupport"]),
        .testTarget(
            name: "IngestTests", dependencies: ["Ingest", "Queue", "Storage", "Support", "TestSupport", "FCMLegacy"]),
        .testTarget(
            name: "ConsoleTests",
            dependencies: ["Console", "HTTP", "Ingest", "Queue", "Storage", "Support", "TestSupport"]),
        .testTarget(name: "ClassifyTests", dependencies: ["Classify", "Queue", "Support"]),
        .testTarget(name: "OAuthTests", dependencies: ["OAuth", "Support", "TestSupport"]),
        .testTarget(
            name: "FCMSimulatorTests",
            dependencies: [
                "FCMSimulator", "FCMLegacySimulator", "FCMV1Simulator", "APNsSimulator", "WebPushSimulator",
                "HMSSimulator", "HTTP", "Ingest", "OAuth", "Send", "NetworkTestSupport", "TestSupport", "WebPushCrypto",
            ]),
        .testTarget(name: "CurlTests", dependencies: ["CCurl"]),
        .testTarget(
            name: "DeliveryTests",
            dependencies: [
                "Delivery", "Queue", "Classify", "Send", "OAuth", "Support", "HTTP", "FCMLegacy", "WebPush", "TestSupport",
            ]),
        .testTarget(
            name: "FCMLegacyTests", dependencies: ["FCMLegacy", "Delivery", "Classify", "Queue", "Send", "Support"],
            path: "Tests/Providers/FCMLegacyTests"),
        .testTarget(
            name: "FCMV1Tests",
            dependencies: ["FCMV1", "FCMLegacy", "Delivery", "Classify", "HTTP", "OAuth", "Queue", "Send", "Support"],
            path: "Tests/Providers/FCMV1Tests"),
        .testTarget(
            name: "ProviderListTests", dependencies: ["ProviderList", "ProviderKit", "FCMSimulator", "Support"],
            path: "Tests/Providers/ProviderListTests"),
        .testTarget(
            name: "APNsTests", dependencies: ["APNs", "Delivery", "Classify", "OAuth", "Queue", "Send", "Support"],
            path: "Tests/Providers/APNsTests"),
        .testTarget(
            name: "WebPushTests",
            dependencies: [
                "WebPush", "Delivery", "Classify", "HTTP", "TestSupport", "Ingest", "OAuth", "Posix", "Queue",
                "Send", "Storage", "Support", "WebPushCrypto",
            ],
            path: "Tests/Providers/WebPushTests"),
        .testTarget(
            name: "WebPushCryptoTests", dependencies: ["WebPushCrypto", "Ingest", "OAuth", "Support"],
            path: "Tests/Providers/WebPushCryptoTests"),
        .testTarget(
            name: "HMSTests",
            dependencies: [
                "HMS", "HMSSimulator", "ProviderKit", "Classify", "Delivery", "HTTP", "Ingest", "Queue", "Send",
                "Support", "TestSupport",
            ],
            path: "Tests/Providers/HMSTests"),
        // The TLS + HTTP/2 stand-in, the TCP fault proxy and the TLS probe (node scripts) as the tests run them.
        .target(name: "NetworkTestSupport", dependencies: ["Send", "TestSupport"], path: "Tests/NetworkTestSupport"),
        .testTarget(
            name: "SendTests", dependencies: ["Send", "HTTP", "Posix", "Support", "NetworkTestSupport", "TestSupport"]),
        .testTarget(
            name: "IntegrationTests", dependencies: [
                "HeraldCLI", "Queue", "Storage", "Support", "OAuth", "PostgreSQL", "PostgreSQLTestSupport",
                "NetworkTestSupport", "TestSupport", "HMSSimulator", "HTTP", "Ingest", "WebPushCrypto",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
