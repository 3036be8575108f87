// swift-tools-version:6.0
import PackageDescription

// HERALD_SANITIZE=address builds Herald's own targets with AddressSanitizer (scripts/test does, for
// its one shared build): the dependencies are left uninstrumented, so they are compiled once, as usual.
let sanitize = Context.environment["HERALD_SANITIZE"].map { [$0] } ?? []
let sanitized: [SwiftSetting] = sanitize.map { .unsafeFlags(["-sanitize=\($0)"]) }
let sanitizedC: [CSetting] = sanitize.map { .unsafeFlags(["-fsanitize=\($0)"]) }
let sanitizedLink: [LinkerSetting] = sanitize.map { .unsafeFlags(["-sanitize=\($0)"]) }

let package = Package(
    // Linux only (epoll, eventfd, malloc_trim, Glibc), which SwiftPM's `platforms` cannot say: it lists
    // Apple's platforms alone. CLinux.h stops a build anywhere else with a message.
    name: "Herald",
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .executable(name: "herald-bench", targets: ["herald-bench"]),
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
        // Foundation only, for apps and services on Linux and Apple's platforms alike.
        .library(name: "HeraldClient", targets: ["HeraldClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(name: "CLinux"),
        .target(name: "HeraldClient"),
        .target(name: "HeraldThreads", dependencies: ["CLinux"]),
        .target(name: "HeraldJSON"),
        .target(name: "HeraldStore", dependencies: ["CLinux", "CSQLite", "CPostgres", "HeraldJSON", "HeraldThreads",
                                                    .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "HeraldCore", dependencies: ["CLinux", "HeraldJSON", "HeraldThreads"]),
        .target(name: "HeraldDomain", dependencies: ["HeraldThreads"]),
        .target(name: "HeraldAuth", dependencies: ["HeraldJSON", "HeraldThreads", .product(name: "JWTKit", package: "jwt-kit")]),
        .target(
            name: "HeraldHTTP",
            dependencies: [
                "CMicroHTTPD", "CLinux", "HeraldJSON", "HeraldThreads",
                .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HeraldServer",
            dependencies: [
                "HeraldJSON", "HeraldCore", "HeraldDomain", "HeraldHTTP", "HeraldStore", "HeraldAuth", "HeraldThreads",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // Compiled into the binary at build time (`PackageResources`), so Herald needs no files beside
            // it. `Resources/openapi.yaml` links to the top-level `openapi.yaml`.
            resources: [
                .embedInCode("Resources/openapi.yaml"),
                .embedInCode("Resources/Web/index.html"),
                .embedInCode("Resources/Web/app.js"),
                .embedInCode("Resources/Web/herald.js"),
                .embedInCode("Resources/Web/herald.d.ts"),
                .embedInCode("Resources/Web/app.css"),
                .embedInCode("Resources/Web/favicon.svg"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldServer", "HeraldHTTP", "HeraldStore", "HeraldAuth", "HeraldThreads",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "herald-bench",
            dependencies: ["CLinux", "HeraldClient", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .target(name: "HeraldTestSupport", dependencies: ["HeraldDomain", "HeraldHTTP", "HeraldThreads", "CPostgres", "CLinux"], path: "Tests/HeraldTestSupport"),
        .testTarget(name: "HeraldJSONTests", dependencies: ["HeraldJSON", "HeraldTestSupport"]),
        .testTarget(name: "HeraldThreadsTests", dependencies: ["HeraldThreads"]),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldJSON", "HeraldThreads"]),
        .testTarget(name: "HeraldDomainTests", dependencies: ["HeraldDomain", "HeraldThreads", "HeraldTestSupport"]),
        .testTarget(name: "HeraldAuthTests", dependencies: ["HeraldAuth", "HeraldTestSupport"]),
        .testTarget(name: "HeraldStoreTests", dependencies: ["HeraldStore", "HeraldThreads", "HeraldTestSupport"]),
        .testTarget(
            name: "HeraldHTTPTests",
            dependencies: ["HeraldHTTP", "HeraldThreads", "HeraldTestSupport", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: ["HeraldServer", "HeraldCore", "HeraldDomain", "HeraldJSON", "HeraldTestSupport", "HeraldAuth", "HeraldThreads", "CSQLite", "herald", "herald-bench", "HeraldClient",
                           .product(name: "JWTKit", package: "jwt-kit"), .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
    ]
)

// Every import says who sees it (`public import` when a public declaration shows the module's types),
// a member is used only through a module its file imports, and an existential is spelled `any`.
let upcoming: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"), .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + upcoming + sanitized
    target.cSettings = (target.cSettings ?? []) + sanitizedC
    target.linkerSettings = (target.linkerSettings ?? []) + sanitizedLink
}
