// ChildProcesses.swift — running a child process (a compiler, a C probe, a probe executable)
// with a deadline, for every test target: output through files, so a chatty child never blocks
// on a pipe, and a child that runs over is killed (after a gdb backtrace, when asked).
import Foundation
import Glibc

/// Deadline for a child process (a compiler or a probe) to exit, unless the caller gives one.
public let childProcessSeconds: Double = 60

/// How a child process ended.
public struct ChildResult: Sendable, CustomStringConvertible {
    public var exitCode: Int32 = -1
    public var stdout = ""
    public var stderr = ""
    public var timedOut = false
    public var launchError: String?
    /// Every thread's stack of a child that ran over its deadline (from gdb, when installed).
    public var hangBacktrace: String?

    public var succeeded: Bool { launchError == nil && !timedOut && exitCode == 0 }

    public var description: String {
        if let launchError { return "could not launch: \(launchError)" }
        return "exit \(exitCode)\(timedOut ? " (timed out, terminated)" : "")\n"
            + "--- stdout ---\n\(stdout)--- stderr ---\n\(stderr)"
            + (hangBacktrace.map { "--- where it hung (gdb) ---\n\($0)" } ?? "")
    }

    /// "key=value" lines of stdout as a dictionary (later lines win).
    public var values: [String: String] {
        var result: [String: String] = [:]
        for line in stdout.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            result[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return result
    }
}

/// A fresh private directory under the system's temporary directory.
public func makeScratchDirectory(_ label: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("operations-tests-\(label)-\(getpid())-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Runs a program (looked up on PATH through /usr/bin/env), waits at most `seconds`, and kills it
/// when it runs over. Output goes through files, so a chatty child can never block on a pipe.
/// `environment` replaces the inherited one entirely when given. With `backtraceOnTimeout`, a
/// child that runs over is first inspected with gdb (if installed) so the failure shows where
/// it hung. Waiting suspends the calling task: no thread is blocked while the child runs.
public func runChild(_ program: String, _ arguments: [String], environment: [String: String]? = nil,
              seconds: Double = childProcessSeconds, backtraceOnTimeout: Bool = false) async -> ChildResult {
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

