// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "engage",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .executable(name: "engage", targets: ["engage"]),
        .library(name: "EngageClient", targets: ["EngageClient"]),
        .library(name: "EngageNotificationService", targets: ["EngageNotificationService"]),
    ],
    targets: [
        // C libraries from Debian; every Unsafe* use stays in the Swift module right above each.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // libmicrohttpd, and GnuTLS for its HTTPS certificate callback (libgnutls28-dev).
        .target(
            name: "CMicroHTTPD",
            linkerSettings: [.linkedLibrary("microhttpd"), .linkedLibrary("gnutls")]
        ),
        .target(name: "CProcess"),
        // The HTTP(S) load of `engage bench ingest`: one epoll thread, so it takes little of the machine.
        .target(name: "CLoadGenerator", linkerSettings: [.linkedLibrary("gnutls")]),
        .target(name: "LoadGenerator", dependencies: ["CLoadGenerator"]),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // Infrastructure.
        // JSON string literals, written the same way by every server module.
        .target(name: "JSONText"),
        // SHA-256, HMAC-SHA256 and hex: key hashes, migration checksums, device id hashing.
        .target(name: "Digest"),
        .target(name: "Runtime", dependencies: ["JSONText"]),
        .target(name: "Postgres", dependencies: ["CLibPQ"]),
        .target(name: "EmbeddedPostgres", dependencies: ["CProcess", "Digest", "Postgres"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CZlib", "JSONText"]),

        // The domain, then the pieces that store and serve it.
        .target(name: "EngageCore", dependencies: ["Digest", "JSONText"]),
        .target(name: "EventStore", dependencies: ["Digest", "EngageCore", "Postgres", "Runtime"]),
        .target(name: "Projections", dependencies: ["EngageCore", "EventStore", "Postgres", "Runtime"]),
        .target(name: "Experiments", dependencies: ["EngageCore", "EventStore", "Postgres", "Runtime"]),
        // Pruning the oldest weeks of the log into archives, and restoring them.
        .target(name: "LogRetention", dependencies: ["CZlib", "Digest", "EngageCore", "EventStore", "Postgres", "Runtime"]),
        // The web console's pages: HTML and inline SVG rendered from the report, experiment and
        // health models, no I/O (EngageAPI serves them).
        .target(name: "EngageConsole", dependencies: ["Digest", "EngageCore"]),
        .target(name: "EngageAPI", dependencies: ["Digest", "EngageConsole", "EngageCore", "EventStore", "Experiments", "HTTPServer", "Postgres",
                                                  "Projections", "Runtime"]),
        // The app-side client: Foundation only, no other engage module.
        .target(name: "EngageClient", resources: [.copy("PrivacyInfo.xcprivacy")]),
        // What the app and its extensions link besides: the Notification Service Extension and the
        // UserNotifications glue (compiled only where the framework exists), on EngageClient.
        .target(name: "EngageNotificationService", dependencies: ["EngageClient"], resources: [.copy("PrivacyInfo.xcprivacy")]),
        .executableTarget(
            name: "engage",
            dependencies: ["CLoadGenerator", "CProcess", "EngageAPI", "LoadGenerator", "EngageCore", "EventStore", "EmbeddedPostgres", "Experiments", "HTTPServer", "LogRetention", "Postgres", "Projections", "Runtime"]
        ),

        // Test support: a throwaway PostgreSQL per test process, fresh databases per test.
        .target(name: "TestSupport", dependencies: ["EmbeddedPostgres", "EngageAPI", "EngageCore", "EventStore", "Experiments", "HTTPServer", "Postgres",
                                                   "Projections", "Runtime"], path: "Tests/TestSupport"),
        .testTarget(name: "EngageCoreTests", dependencies: ["Digest", "EngageCore", "JSONText", "SeededRandom"], exclude: ["Golden"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "EngageCore", "Postgres", "Runtime", "TestSupport"]),
        .testTarget(name: "ProjectionsTests", dependencies: ["Projections", "EngageCore", "EventStore", "Experiments", "LogRetention", "Postgres", "Runtime",
                                                            "SeededRandom", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "TestSupport"]),
        // A loopback HTTP responder for the client's faults and media downloads.
        .target(name: "ClientTestSupport", path: "Tests/ClientTestSupport"),
        .target(name: "SeededRandom", path: "Tests/SeededRandom"),
        .testTarget(name: "JSONTextTests", dependencies: ["JSONText"]),
        // The client's copy of the event vocabulary against the server's.
        .testTarget(name: "VocabularyAgreementTests", dependencies: ["EngageClient", "EngageCore"]),
        .testTarget(name: "EngageClientTests", dependencies: ["ClientTestSupport", "EngageClient", "EngageNotificationService", "JSONText", "TestSupport",
                                                             "EngageAPI", "EngageCore", "EventStore", "Postgres", "SeededRandom"]),
        // `swift run -c release EngageClientBench queue|handler`: the client's timings (BENCHMARKS.md).
        .executableTarget(name: "EngageClientBench", dependencies: ["ClientTestSupport", "EngageClient", "EngageNotificationService"],
                          path: "Benchmarks/EngageClientBench"),
        .testTarget(name: "LogRetentionTests", dependencies: ["LogRetention", "EngageCore", "EventStore", "Experiments", "Postgres", "Projections",
                                                             "Runtime", "TestSupport"]),
        .testTarget(name: "ExperimentsTests", dependencies: ["Experiments", "EngageCore", "EventStore", "Postgres", "Runtime", "TestSupport"]),
        // Fault tests start engage (and this stand-in for an app extension) as real processes and kill them.
        .executableTarget(name: "EngageClientProbe", dependencies: ["EngageClient"], path: "Tests/EngageClientProbe"),
        .testTarget(name: "FaultTests", dependencies: ["EmbeddedPostgres", "EngageAPI", "EngageClient", "EngageCore", "EventStore", "Experiments",
                                                       "Postgres", "Projections", "Runtime", "TestSupport"]),
        .testTarget(name: "EngageAPITests", dependencies: ["CLoadGenerator", "Digest", "EngageAPI", "EngageConsole", "LoadGenerator", "EngageCore", "EventStore",
                                                          "HTTPServer", "Postgres", "Projections", "Runtime", "TestSupport"],
                    exclude: ["Corpus"]),
    ],
    swiftLanguageModes: [.v6]
)
