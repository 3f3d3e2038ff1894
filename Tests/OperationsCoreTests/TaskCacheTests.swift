// TaskCacheTests.swift — task memory recycling (task_cache.c) at thread exit, run for real in a
// child process: Tests/Probes/task_cache_exit_probe.c, compiled with the system's `cc` against
// the core's sources.
import Testing

// No ProcessLock trait: everything happens in a child process.
@Suite
struct TaskCacheTests {
    /// Bound for one probe run (it normally takes a few milliseconds).
    static let runSeconds: Double = 30

    // Foundation frees a Thread's closure (and the operations it held) while the thread exits,
    // after the cache's own thread-exit destructor may have run. Blocks freed then used to stay
    // in the dead thread's list: 100 freed, 0 ever seen again.
    @Test func tasksFreedAfterTheCachesThreadExitDestructorGoBackToTheGlobalStack() async throws {
        let path = try await ProbeBuilder.shared.binary("task_cache_exit_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), seconds: Self.runSeconds,
                                    backtraceOnTimeout: true)
        try #require(!result.timedOut, "the task-cache probe did not exit within \(Self.runSeconds) s:\n\(result)")
        let values = result.values
        #expect(values["freed"] == "100", "the exiting thread did not free its 100 tasks:\n\(result)")
        #expect(values["returned"] == values["freed"],
                "blocks freed after the cache's thread-exit destructor were not handed back:\n\(result)")
        #expect(result.exitCode == 0, "the task-cache probe failed:\n\(result)")
    }
}
