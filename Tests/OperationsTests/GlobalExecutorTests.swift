// GlobalExecutorTests.swift — `OperationsRuntime.installAsGlobalExecutor()`, checked in a process
// of its own: installing cannot be undone, and in this process it would move every other test's
// tasks onto the runtime's workers. The probe (Tests/GlobalExecutorProbe) leaves another
// library's hook alone, installs, then checks that each priority's tasks run on the workers of
// its class with `OperationQueue.current` nil, that nonisolated async calls do not hop, that a
// high-priority task does not wait behind background ones, that blocked tasks do not starve the
// one that releases them, and that tasks still hand over to a queue used as a task executor, an
// actor on a serial queue, a task group, `async let` and `Task.sleep`. A deliberate addition to
// Foundation's API (it offers no global executor), so there is no Foundation counterpart to run.
import Foundation
import Operations
import Testing

// No .sharesProcess: the probe runs in a child process and touches no queue of this one.
@Suite struct GlobalExecutorTests {
    @Test func tasksRunOnTheWorkersOfTheirClassOnceInstalled() throws {
        let probe = ImportRouteLayout.bin.appendingPathComponent("GlobalExecutorProbe")
        try #require(FileManager.default.isExecutableFile(atPath: probe.path), "no probe at \(probe.path): the test target depends on it")
        // Into a file, not a pipe: a pipe read only after the exit would block a child that
        // writes more than its buffer (a crash's backtrace).
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("global-executor-\(getpid())-\(UUID().uuidString).txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = probe
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        // The probe ends itself after 100 s (alarm); past 150 s it is stuck.
        let deadline = Date().addingTimeInterval(150)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        let hung = process.isRunning
        if hung {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try handle.close()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        try #require(!hung, "the global-executor probe ran for more than 150 s:\n\(text)")
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "the global-executor probe failed (status \(process.terminationStatus)):\n\(text)")
        #expect(text.hasSuffix("ok\n"), "the probe's output:\n\(text)")
    }
}
