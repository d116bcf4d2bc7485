// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "engage",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .executable(name: "engage", targets: ["engage"]),
        .library(name: "EngageClient", targets: ["EngageClient"]),
    ],
    targets: [
        // C libraries from Debian; every Unsafe* use stays in the Swift module right above each.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            name: "CMicroHTTPD",
            linkerSettings: [.linkedLibrary("microhttpd")]
        ),
        .target(name: "CProcess"),
        // The HTTP load of `engage bench ingest`: one epoll thread, so it takes little of the machine.
        .target(name: "CLoadGenerator"),
        .target(name: "LoadGenerator", dependencies: ["CLoadGenerator"]),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // Infrastructure.
        .target(name: "Runtime"),
        .target(name: "Postgres", dependencies: ["CLibPQ"]),
        .target(name: "EmbeddedPostgres", dependencies: ["CProcess", "EngageCore", "Postgres", "Runtime"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CZlib", "Runtime"]),

        // The domain, then the pieces that store and serve it.
        .target(name: "EngageCore"),
        .target(name: "EventStore", dependencies: ["EngageCore", "Postgres", "Runtime"]),
        .target(name: "Projections", dependencies: ["EngageCore", "EventStore", "Postgres", "Runtime"]),
        .target(name: "Experiments", dependencies: ["EngageCore", "EventStore", "Postgres", "Runtime"]),
        .target(name: "EngageAPI", dependencies: ["EngageCore", "EventStore", "Experiments", "HTTPServer", "Postgres", "Projections", "Runtime"]),
        // The app-side client: Foundation only, no other engage module.
        .target(name: "EngageClient"),
        .executableTarget(
            name: "engage",
            dependencies: ["CLoadGenerator", "CProcess", "EngageAPI", "LoadGenerator", "EngageCore", "EventStore", "EmbeddedPostgres", "Experiments", "HTTPServer", "Postgres", "Projections", "Runtime"]
        ),

        // Test support: a throwaway PostgreSQL per test process, fresh databases per test.
        .target(name: "TestSupport", dependencies: ["EmbeddedPostgres", "EngageAPI", "EventStore", "HTTPServer", "Postgres", "Projections", "Runtime"], path: "Tests/TestSupport"),
        .testTarget(name: "EngageCoreTests", dependencies: ["EngageCore"], exclude: ["Golden"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "EngageCore", "Postgres", "TestSupport"]),
        .testTarget(name: "ProjectionsTests", dependencies: ["Projections", "EngageCore", "EventStore", "Experiments", "Postgres", "Runtime", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime"]),
        // The client's copy of the event vocabulary against the server's.
        .testTarget(name: "VocabularyAgreementTests", dependencies: ["EngageClient", "EngageCore"]),
        .testTarget(name: "EngageClientTests", dependencies: ["EngageClient", "TestSupport", "EngageAPI", "EventStore", "Postgres"]),
        .testTarget(name: "ExperimentsTests", dependencies: ["Experiments", "EngageCore", "EventStore", "Postgres", "Runtime", "TestSupport"]),
        // Fault tests start engage (and this stand-in for an app extension) as real processes and kill them.
        .executableTarget(name: "EngageClientProbe", dependencies: ["EngageClient"], path: "Tests/EngageClientProbe"),
        .testTarget(name: "FaultTests", dependencies: ["EmbeddedPostgres", "EngageAPI", "EngageClient", "EngageCore", "EventStore", "Experiments",
                                                       "Postgres", "Projections", "Runtime", "TestSupport"]),
        .testTarget(name: "EngageAPITests", dependencies: ["CLoadGenerator", "EngageAPI", "LoadGenerator", "EngageCore", "EventStore", "HTTPServer", "Postgres", "Runtime", "TestSupport"],
                    exclude: ["Corpus"]),
    ],
    swiftLanguageModes: [.v6]
)
