// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .executable(name: "herald-bench", targets: ["herald-bench"]),
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
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
        .target(name: "HeraldJSON"),
        .target(name: "HeraldStore", dependencies: ["CSQLite", "CPostgres", "HeraldJSON"]),
        .target(name: "HeraldCore", dependencies: ["HeraldJSON"]),
        .target(name: "HeraldDomain"),
        .target(name: "HeraldAuth", dependencies: [.product(name: "JWTKit", package: "jwt-kit")]),
        .target(
            name: "HeraldHTTP",
            dependencies: ["CMicroHTTPD", "CLinux", "HeraldJSON", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "HeraldServer",
            dependencies: [
                "HeraldJSON", "HeraldCore", "HeraldDomain", "HeraldHTTP", "HeraldStore", "HeraldAuth", "CLinux",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldServer", "HeraldStore", "HeraldAuth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "herald-bench",
            dependencies: ["CLinux", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .target(name: "HeraldTestSupport", dependencies: ["HeraldDomain", "CPostgres"], path: "Tests/HeraldTestSupport"),
        .testTarget(name: "HeraldJSONTests", dependencies: ["HeraldJSON"]),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldJSON"]),
        .testTarget(name: "HeraldDomainTests", dependencies: ["HeraldDomain", "HeraldTestSupport"]),
        .testTarget(name: "HeraldStoreTests", dependencies: ["HeraldStore", "HeraldTestSupport"]),
        .testTarget(name: "HeraldHTTPTests", dependencies: ["HeraldHTTP", "HeraldTestSupport"]),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: ["HeraldServer", "HeraldCore", "HeraldDomain", "HeraldJSON", "HeraldTestSupport", "HeraldAuth", "CSQLite", "herald", "herald-bench",
                           .product(name: "JWTKit", package: "jwt-kit")]
        ),
    ]
)
