// ImportRouteTests.swift — the migration a user follows, compiled outside the package (issue 22,
// item 5; issue 33, item 10): the client files in Tests/Fixtures/ImportRoutes (see its README)
// are type-checked by `swiftc` against the modules this test run was built with, in the Swift 5
// and the Swift 6 language modes, warnings as errors. `import Operations` must give Foundation's
// names and this package's queue types alone, beside `import Foundation` and beside
// `import XCTest`, with no scoped imports; the scoped imports users wrote before the facade must
// keep compiling; and the implementation module imported directly beside Foundation must stay
// ambiguous (the reason the facade exists; see Sources/Operations/Exports.swift).
import Foundation
import Operations
import Testing

/// Where the fixtures and the build's modules are.
enum ImportRouteLayout {
    /// Tests/Fixtures/ImportRoutes, found from this file.
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/ImportRoutes")

    /// The folder of the running test bundle: SwiftPM's bin folder, which holds `Modules` and
    /// the C core's generated module map.
    static let bin: URL = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                                  ?? CommandLine.arguments[0]).deletingLastPathComponent()
}

/// What a compiler run printed, and how it ended.
struct CompileResult: CustomStringConvertible {
    var status: Int32
    var output: String
    var description: String { "exit \(status)\n\(output)" }
}

/// Type-checks `fixture` with `swiftc` in `languageMode`, warnings as errors, against this
/// build's Operations (and the OperationsImplementation it re-exports), OperationsNetworking and
/// OperationsCore modules, and the toolchain's XCTest.
func typeCheck(_ fixture: String, languageMode: Int) throws -> CompileResult {
    let modules = ImportRouteLayout.bin.appendingPathComponent("Modules")
    let moduleMap = ImportRouteLayout.bin.appendingPathComponent("OperationsCore.build/module.modulemap")
    for needed in [modules.appendingPathComponent("Operations.swiftmodule"), modules.appendingPathComponent("OperationsImplementation.swiftmodule"), moduleMap] {
        try #require(FileManager.default.fileExists(atPath: needed.path), "no \(needed.path): the bin folder of this build was not found")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["swiftc", "-typecheck", "-parse-as-library", "-swift-version", "\(languageMode)",
                         "-warnings-as-errors", "-I", modules.path, "-Xcc", "-fmodule-map-file=\(moduleMap.path)",
                         ImportRouteLayout.fixtures.appendingPathComponent(fixture).path]
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("import-route-\(getpid())-\(UUID().uuidString).txt")
    _ = FileManager.default.createFile(atPath: output.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: output) }
    let handle = try FileHandle(forWritingTo: output)
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    // The compiler takes a few seconds; more than two minutes is a hang.
    let deadline = Date().addingTimeInterval(120)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    if process.isRunning {
        process.terminate()
        process.waitUntilExit()
        Issue.record("swiftc on \(fixture) ran for more than 120 s")
    }
    try handle.close()
    let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    return CompileResult(status: process.terminationStatus, output: text)
}

// No .sharesProcess: the compiler runs in child processes and touches no queue of this one.
@Suite struct ImportRouteTests {
    static let languageModes = [5, 6]

    @Test(arguments: languageModes)
    func replacingImportFoundationByImportOperationsCompiles(_ languageMode: Int) throws {
        let result = try typeCheck("OnlyOperations.swift", languageMode: languageMode)
        #expect(result.status == 0, "Swift \(languageMode): a file that imports only Operations does not compile:\n\(result)")
    }

    @Test(arguments: languageModes)
    func besideImportFoundationWithoutScopedImportsTheNamesAreThisPackages(_ languageMode: Int) throws {
        let result = try typeCheck("BesideFoundationUnscoped.swift", languageMode: languageMode)
        #expect(result.status == 0, "Swift \(languageMode): a file that imports Foundation and Operations does not compile:\n\(result)")
    }

    @Test(arguments: languageModes)
    func besideImportXCTestWithoutScopedImportsTheNamesAreThisPackages(_ languageMode: Int) throws {
        let result = try typeCheck("WithXCTest.swift", languageMode: languageMode)
        #expect(result.status == 0, "Swift \(languageMode): a test file that imports XCTest and Operations does not compile:\n\(result)")
    }

    @Test(arguments: languageModes)
    func scopedImportsWrittenBeforeTheFacadeStillCompile(_ languageMode: Int) throws {
        let result = try typeCheck("BesideFoundation.swift", languageMode: languageMode)
        #expect(result.status == 0, "Swift \(languageMode): a file with the scoped imports `import class Operations.OperationQueue` does not compile:\n\(result)")
    }

    @Test(arguments: languageModes)
    func importOperationsNetworkingGivesURLSessionOurQueue(_ languageMode: Int) throws {
        let result = try typeCheck("Networking.swift", languageMode: languageMode)
        #expect(result.status == 0, "Swift \(languageMode): a file that imports OperationsNetworking does not compile:\n\(result)")
    }

    @Test(arguments: languageModes)
    func theImplementationModuleBesideImportFoundationIsAmbiguous(_ languageMode: Int) throws {
        let result = try typeCheck("ImplementationBesideFoundation.swift", languageMode: languageMode)
        #expect(result.status != 0 && result.output.contains("ambiguous"),
                "Swift \(languageMode): the implementation beside Foundation no longer conflicts (is the facade still needed? see Sources/Operations/Exports.swift):\n\(result)")
    }
}
