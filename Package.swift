// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Operations",
    products: [
        .library(name: "Operations", targets: ["Operations"]),
        .library(name: "OperationsCore", targets: ["OperationsCore"]),
        .executable(name: "operations-perf", targets: ["operations-perf"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CNuma",
            path: "CShims/CNuma",
            pkgConfig: "numa",
            providers: [.apt(["libnuma-dev"])]
        ),
        .target(
            name: "OperationsCore",
            dependencies: ["CNuma"],
            path: "CShims/OperationsCore",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("numa"), .linkedLibrary("pthread"), .linkedLibrary("m")]
        ),
        .target(
            name: "Operations",
            dependencies: ["OperationsCore"],
            path: "Sources/Operations"
        ),
        .target(
            name: "DispatchBaselines",
            path: "Perf/DispatchBaselines",
            linkerSettings: [.linkedLibrary("dispatch")]
        ),
        .executableTarget(
            name: "operations-perf",
            dependencies: [
                "Operations", "OperationsCore", "DispatchBaselines",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Perf/operations-perf"
        ),
        .target(
            name: "OperationsTestSupport",
            path: "Tests/OperationsTestSupport"
        ),
        .testTarget(
            name: "OperationsCoreTests",
            dependencies: ["OperationsCore", "OperationsTestSupport"],
            path: "Tests/OperationsCoreTests"
        ),
        // The behaviour tests, twice: over Operations, and over Foundation's OperationQueue
        // (BehaviourTestsOnFoundation/Shared links to the same files), so each behaviour is
        // checked differentially; see Tests/BehaviourTests/Support/UnderTest.swift.
        .testTarget(
            name: "OperationsBehaviourTests",
            dependencies: ["Operations", "OperationsTestSupport"],
            path: "Tests/BehaviourTests"
        ),
        .testTarget(
            name: "FoundationBehaviourTests",
            dependencies: ["OperationsTestSupport"],
            path: "Tests/BehaviourTestsOnFoundation",
            swiftSettings: [.define("BEHAVIOUR_ON_FOUNDATION")]
        ),
        .testTarget(
            name: "OperationsTests",
            dependencies: ["Operations", "OperationsCore", "OperationsTestSupport"],
            path: "Tests/OperationsTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
