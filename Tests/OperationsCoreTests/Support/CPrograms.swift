// CPrograms.swift — finding the package, compiling a C program against the core's sources with
// the system compiler, and running child processes with a deadline.
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

/// How a child process ended.
struct ChildResult: Sendable, CustomStringConvertible {
    var exitCode: Int32 = -1
    var stdout = ""
    var stderr = ""
    var timedOut = false
    var launchError: String?
    /// Every thread's stack of a child that ran over its deadline (from gdb, when installed).
    var hangBacktrace: String?

    var succeeded: Bool { launchError == nil && !timedOut && exitCode == 0 }

    var description: String {
        if let launchError { return "could not launch: \(launchError)" }
        return "exit \(exitCode)\(timedOut ? " (timed out, terminated)" : "")\n"
            + "--- stdout ---\n\(stdout)--- stderr ---\n\(stderr)"
            + (hangBacktrace.map { "--- where it hung (gdb) ---\n\($0)" } ?? "")
    }

    /// "key=value" lines of stdout as a dictionary (later lines win).
    var values: [String: String] {
        var result: [String: String] = [:]
        for line in stdout.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            result[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return result
    }
}

/// A fresh private directory under the system's temporary directory.
func makeScratchDirectory(_ label: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("operations-core-tests-\(label)-\(getpid())-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Runs a program (looked up on PATH through /usr/bin/env), waits at most `seconds`, and kills it
/// when it runs over. Output goes through files, so a chatty child can never block on a pipe.
/// `environment` replaces the inherited one entirely when given. With `backtraceOnTimeout`, a
/// child that runs over is first inspected with gdb (if installed) so the failure shows where
/// it hung. Waiting suspends the calling task: no thread is blocked while the child runs.
func runChild(_ program: String, _ arguments: [String], environment: [String: String]? = nil,
              seconds: Double = Limits.childSeconds, backtraceOnTimeout: Bool = false) async -> ChildResult {
    var result = ChildResult()
    let directory: URL
    do {
        directory = try makeScratchDirectory("child")
    } catch {
        result.launchError = "cannot create a scratch directory: \(error)"
        return result
    }
    defer { try? FileManager.default.removeItem(at: directory) }
    let outURL = directory.appendingPathComponent("stdout")
    let errURL = directory.appendingPathComponent("stderr")
    guard FileManager.default.createFile(atPath: outURL.path, contents: nil),
          FileManager.default.createFile(atPath: errURL.path, contents: nil),
          let out = try? FileHandle(forWritingTo: outURL),
          let err = try? FileHandle(forWritingTo: errURL) else {
        result.launchError = "cannot create output files in \(directory.path)"
        return result
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [program] + arguments
    if let environment { process.environment = environment }
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    let exited = AsyncEvent()
    process.terminationHandler = { _ in exited.fire() }
    do {
        try process.run()
    } catch {
        result.launchError = "\(program): \(error)"
        return result
    }
    let pid = process.processIdentifier
    let inTime = await withTaskGroup(of: Bool.self) { group in
        group.addTask { await exited.wait(); return true }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            return false
        }
        let first = await group.next() ?? false
        if !first {
            if backtraceOnTimeout && FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") {
                let gdb = await runChild("gdb", ["-p", "\(pid)", "-batch", "-nx", "-ex", "thread apply all bt"],
                                         seconds: 30)
                result.hangBacktrace = gdb.stdout.split(separator: "\n")
                    .filter { $0.hasPrefix("#") || $0.hasPrefix("Thread ") }.joined(separator: "\n")
            }
            kill(pid, SIGKILL)  // its exit ends the other child task
        }
        group.cancelAll()
        return first
    }
    result.timedOut = !inTime
    try? out.close()
    try? err.close()
    result.exitCode = process.terminationStatus
    result.stdout = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
    result.stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
    return result
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
