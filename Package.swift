// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Operations",
    products: [
        .library(name: "Operations", targets: ["Operations"]),
        .library(name: "OperationsCore", targets: ["OperationsCore"]),
        // URLSession with our queue as its delegate queue; apart, because FoundationNetworking
        // links libcurl.
        .library(name: "OperationsNetworking", targets: ["OperationsNetworking"]),
    ],
    // No dependencies: a package that depends on Operations resolves nothing else. The perf
    // harness is a package of its own in Perf/ (Perf/Package.swift).
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
        // The Swift layer. Users do not import it: they import Operations, the facade below.
        .target(
            name: "OperationsImplementation",
            dependencies: ["OperationsCore"],
            path: "Sources/OperationsImplementation"
        ),
        // The module users import: it re-exports Foundation and the implementation, with the
        // four types Foundation also declares re-exported by scoped imports, so that they win
        // also in files that import Foundation or XCTest (Sources/Operations/Exports.swift).
        .target(
            name: "Operations",
            dependencies: ["OperationsImplementation"],
            path: "Sources/Operations"
        ),
        .target(
            name: "OperationsNetworking",
            dependencies: ["Operations"],
            path: "Sources/OperationsNetworking"
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
            dependencies: ["Operations", "OperationsNetworking", "OperationsTestSupport"],
            path: "Tests/BehaviourTests"
        ),
        .testTarget(
            name: "FoundationBehaviourTests",
            dependencies: ["OperationsTestSupport"],
            path: "Tests/BehaviourTestsOnFoundation",
            swiftSettings: [.define("BEHAVIOUR_ON_FOUNDATION")]
        ),
        // Test files migrated by the one-line swap: they import XCTest (which re-exports
        // Foundation), or Foundation, beside Operations, with no scoped imports, and depend on
        // the Operations product alone, as a client's test targets do. The second is
        // swift-corelibs-foundation's own TestOperationQueue.swift, unchanged but for the
        // imports; in the Swift 5 language mode, since the toolchain's XCTest makes its
        // waitForExpectations calls errors in Swift 6 mode (corelibs builds it against its own
        // XCTest).
        .testTarget(
            name: "SwapInTestFilesTests",
            dependencies: ["Operations"],
            path: "Tests/SwapInTestFilesTests"
        ),
        .testTarget(
            name: "SwapInCorelibsTests",
            dependencies: ["Operations"],
            path: "Tests/SwapInCorelibsTests",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // A process of its own for OperationsRuntime.installAsGlobalExecutor(), which cannot be
        // undone (GlobalExecutorTests runs it). Not a product.
        .executableTarget(
            name: "GlobalExecutorProbe",
            dependencies: ["Operations"],
            path: "Tests/GlobalExecutorProbe"
        ),
        .testTarget(
            name: "OperationsTests",
            dependencies: ["Operations", "OperationsImplementation", "OperationsCore", "OperationsTestSupport",
                           "GlobalExecutorProbe"],
            path: "Tests/OperationsTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
