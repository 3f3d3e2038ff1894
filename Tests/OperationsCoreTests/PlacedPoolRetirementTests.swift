// PlacedPoolRetirementTests.swift — a placed pool (one per CPU set and class) does not keep its
// threads for the life of the process: its workers leave after an idle period and come back for
// the next task. Runs in a child process (Tests/Probes/placed_pool_idle_probe.c) with the idle
// period shortened to 100 ms, so this process's runtime is untouched.
import Foundation
import Testing

@Suite
struct PlacedPoolRetirementTests {
    @Test func idlePlacedPoolReleasesItsThreadsAndComesBack() async throws {
        let path = try await ProbeBuilder.shared.binary("placed_pool_idle_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(), backtraceOnTimeout: true)
        try #require(!result.timedOut, "the probe hung:\n\(result)")
        #expect(result.exitCode == 0, "the placed pool's threads did not leave when idle:\n\(result)")
        let values = result.values
        let baseline = try #require(Int(values["baseline"] ?? ""), "\(result)")
        let workers = try #require(Int(values["workers"] ?? ""), "\(result)")
        #expect(Int(values["placed"] ?? "") == baseline + workers, "one thread per CPU of the set while in use:\n\(result)")
        #expect(Int(values["idle"] ?? "") == baseline, "\(result)")
        #expect(Int(values["again"] ?? "") == baseline + workers, "the workers came back for the next task:\n\(result)")
    }
}
