// StressTests.swift — seeded random workloads for a bounded time (SEMANTICS O4, O5, O6, O7, O8,
// D1, D2, P1, P5, Q1, Q2, Q4, Q5, Q6, Q9, Q11, Q12): several queues (widths 1, 2, 3 and
// default), random DAGs across them, synchronous, block and asynchronous operations, random
// priorities and QoS, cancellation before and during execution, suspension, cancelAllOperations,
// barriers, completion blocks, and waits from other threads and from inside operations. The
// invariants are in Support/StressModel.swift; rounds are planned in Support/StressDriver.swift.
//
//   swift test --filter Stress                                   # about 60 s
//   OPERATIONS_TEST_SEED=<seed> swift test --filter Stress       # replay a seed
//   OPERATIONS_STRESS_SECONDS=600 swift test --filter Stress     # longer
//   OPERATIONS_STRESS_FIRST_ROUND=<n> …                          # start at round n of the seed
import Operations
import Testing

@Suite(.needsQuietProcess)
struct StressTests {
    @Test func O7_O8_D1_Q2_Q4_Q9_randomWorkloadsKeepEveryInvariantAndFreeEverything() {
        let seed = testSeed("StressTests")
        let replay = "replay with OPERATIONS_TEST_SEED=\(seed) swift test --filter Stress"
        let start = ContinuousClock.now
        let budget = Duration.seconds(StressBudget.seconds)
        var total = StressRoundOutcome()
        var rounds = 0
        var number = StressBudget.firstRound
        repeat {
            var driver = StressRoundDriver(seed: seed, number: number)
            let outcome = driver.run()
            rounds += 1
            total.operations += outcome.operations
            total.bodiesRun += outcome.bodiesRun
            total.cancelledBeforeRunning += outcome.cancelledBeforeRunning
            total.barriers += outcome.barriers
            total.nestedWaits += outcome.nestedWaits
            if let stuck = outcome.stuck {
                Issue.record("stress seed \(seed), round \(number): \(stuck)\n\(replay) (OPERATIONS_STRESS_FIRST_ROUND=\(number) starts at this round)")
                return
            }
            if !outcome.violations.isEmpty {
                let shown = outcome.violations.prefix(20).joined(separator: "\n  ")
                Issue.record("stress seed \(seed), round \(number): \(outcome.violations.count) violations:\n  \(shown)\n\(replay) (OPERATIONS_STRESS_FIRST_ROUND=\(number) starts at this round)")
                return
            }
            number += 1
        } while ContinuousClock.now - start < budget
        let seconds = (ContinuousClock.now - start).components.seconds
        print("[StressTests] seed \(seed): \(rounds) rounds, \(total.operations) operations (\(total.bodiesRun) ran, "
            + "\(total.cancelledBeforeRunning) cancelled before running), \(total.barriers) barriers, "
            + "\(total.nestedWaits) nested waits in \(seconds) s")
        #expect(total.bodiesRun > 0, "no operation ran (seed \(seed))")
    }
}
