// GlobalExecutorTests.swift — `OperationsRuntime.installAsGlobalExecutor()`, checked in a process
// of its own: installing cannot be undone, and in this process it would move every other test's
// tasks onto the runtime's workers. The probe (Tests/GlobalExecutorProbe) installs, then checks
// that each priority's tasks run on the workers of its class with `OperationQueue.current` nil,
// and that tasks still hand over to a queue used as a task executor, an actor on a serial queue,
// a task group, `async let` and `Task.sleep`. A deliberate addition to Foundation's API (it has
// no global executor of its own to offer), so there is no Foundation counterpart to run.
import Foundation
import Operations
import Testing

// No .sharesProcess: the probe runs in a child process and touches no queue of this one.
@Suite struct GlobalExecutorTests {
    @Test func tasksRunOnTheWorkersOfTheirClassOnceInstalled() throws {
        let probe = ImportRouteLayout.bin.appendingPathComponent("GlobalExecutorProbe")
        try #require(FileManager.default.isExecutableFile(atPath: probe.path), "no probe at \(probe.path): the test target depends on it")
        let process = Process()
        process.executableURL = probe
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // The probe's own waits end within 20 s each; past 90 s it hangs.
        let deadline = Date().addingTimeInterval(90)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            Issue.record("the global-executor probe ran for more than 90 s")
            return
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "the global-executor probe failed (status \(process.terminationStatus)):\n\(text)")
        #expect(text.hasSuffix("ok\n"), "the probe's output:\n\(text)")
    }
}
