// GlobalExecutorTests.swift — `OperationsRuntime.installAsGlobalExecutor()`, checked in a process
// of its own: installing cannot be undone, and in this process it would move every other test's
// tasks onto the runtime's workers. The probe (Tests/GlobalExecutorProbe) leaves another
// library's hook alone, installs, then checks that each priority's tasks run on the workers of
// its class with `OperationQueue.current` nil, that nonisolated async calls do not hop, that a
// high-priority task does not wait behind background ones, that a task's first child runs while
// its parent spins, that blocked tasks do not starve the one that releases them, and that tasks
// still hand over to a queue used as a task executor, an actor on a serial queue, a task group,
// `async let` and `Task.sleep`. A deliberate addition to Foundation's API (it offers no global
// executor), so there is no Foundation counterpart to run.
import Foundation
import Operations
import OperationsTestSupport
import Testing

// No .sharesProcess: the probe runs in a child process and touches no queue of this one.
@Suite struct GlobalExecutorTests {
    @Test func tasksRunOnTheWorkersOfTheirClassOnceInstalled() async throws {
        let probe = ImportRouteLayout.bin.appendingPathComponent("GlobalExecutorProbe")
        try #require(FileManager.default.isExecutableFile(atPath: probe.path), "no probe at \(probe.path): the test target depends on it")
        // The probe ends itself after 100 s (alarm); past 150 s it is stuck, and killed.
        let result = await runChild(probe.path, [], seconds: 150, backtraceOnTimeout: true)
        #expect(result.succeeded, "the global-executor probe failed:\n\(result)")
        #expect(result.stdout.hasSuffix("ok\n"), "the probe's output:\n\(result)")
    }
}
