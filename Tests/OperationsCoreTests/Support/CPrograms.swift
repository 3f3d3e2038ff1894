// CPrograms.swift — finding the package and compiling a C program against the core's sources with
// the system compiler (children run with a deadline through OperationsTestSupport's runChild).
import Foundation
import Glibc

enum PackageLayout {
    /// The package root: the first directory above this file that holds Package.swift.
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url
            }
            url = url.deletingLastPathComponent()
        }
        fatalError("no Package.swift above \(#filePath)")
    }()

    static var coreDirectory: URL { root.appendingPathComponent("CShims/OperationsCore") }
    static var coreInclude: String { coreDirectory.appendingPathComponent("include").path }

    /// Every .c file of the core (in its layer folders: graph/, queue/, pool/, base/), sorted.
    static var coreSources: [String] {
        let names = FileManager.default.subpaths(atPath: coreDirectory.path) ?? []
        return names.filter { $0.hasSuffix(".c") }.sorted()
            .map { coreDirectory.appendingPathComponent($0).path }
    }

    /// C probe programs used by the tests (outside the Swift test target's directory: SwiftPM
    /// refuses C files in a Swift target).
    static var probesDirectory: URL { root.appendingPathComponent("Tests/Probes") }
}

/// The environment of this process without the core's OPERATIONS_* variables, plus `extra`:
/// children start from a known configuration.
func childEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OPERATIONS_") }
    for (key, value) in extra { environment[key] = value }
    return environment
}

/// Compiles `sources` together with the core's sources into `output` with `cc`:
/// `cc -std=gnu11 [-O…] -I<core>/include <core>/*.c <sources> -lnuma -lpthread -lm -o <output>`.
func compileWithCore(_ sources: [String], output: String, optimization: String? = nil) async -> ChildResult {
    var arguments = ["-std=gnu11"]
    if let optimization { arguments.append(optimization) }
    arguments += ["-I\(PackageLayout.coreInclude)"]
    arguments += PackageLayout.coreSources
    arguments += sources
    arguments += ["-lnuma", "-lpthread", "-lm", "-o", output]
    return await runChild("cc", arguments, environment: childEnvironment(), seconds: 120)
}

/// Why a probe could not be built.
struct ProbeBuildFailure: Error, Sendable, CustomStringConvertible {
    let description: String
}

/// Builds each C probe of Tests/Probes (with -O1, against the core's sources) once per test
/// run, however many tests ask for it at the same time.
actor ProbeBuilder {
    static let shared = ProbeBuilder()
    private var builds: [String: Task<Result<String, ProbeBuildFailure>, Never>] = [:]

    /// The path of the built probe `name` (Tests/Probes/<name>.c).
    func binary(_ name: String) async -> Result<String, ProbeBuildFailure> {
        if let build = builds[name] { return await build.value }
        let task = Task { await ProbeBuilder.compile(name) }
        builds[name] = task
        return await task.value
    }

    private static func compile(_ name: String) async -> Result<String, ProbeBuildFailure> {
        let source = PackageLayout.probesDirectory.appendingPathComponent("\(name).c").path
        guard FileManager.default.fileExists(atPath: source) else {
            return .failure(ProbeBuildFailure(description: "missing \(source)"))
        }
        let directory: URL
        do {
            directory = try makeScratchDirectory(name)
        } catch {
            return .failure(ProbeBuildFailure(description: "scratch directory: \(error)"))
        }
        let output = directory.appendingPathComponent(name).path
        let build = await compileWithCore([source], output: output, optimization: "-O1")
        guard build.succeeded else {
            return .failure(ProbeBuildFailure(description: "cc failed for \(name).c:\n\(build)"))
        }
        return .success(output)
    }
}
