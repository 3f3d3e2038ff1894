// swift-tools-version: 6.0
// The perf harness, a package of its own (as swift-nio keeps its benchmarks), so that a package
// depending on Operations resolves none of the harness's dependencies. It depends on the root
// package by path. From the repository root:
//   swift run --package-path Perf -c release operations-perf
import PackageDescription

let package = Package(
    name: "operations-perf",
    products: [
        .executable(name: "operations-perf", targets: ["operations-perf"]),
    ],
    dependencies: [
        .package(name: "Operations", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        .target(
            name: "DispatchBaselines",
            path: "DispatchBaselines",
            linkerSettings: [.linkedLibrary("dispatch")]
        ),
        .executableTarget(
            name: "operations-perf",
            dependencies: [
                .product(name: "Operations", package: "Operations"),
                .product(name: "OperationsCore", package: "Operations"),
                "DispatchBaselines",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "operations-perf"
        ),
    ],
    swiftLanguageModes: [.v6]
)
