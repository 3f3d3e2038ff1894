// Suite.swift — runs the selected workloads in order: verification of all of them first (small,
// counted), then the measurements, into one SuiteReport.

/// What to run and how long.
struct SuiteConfiguration {
    /// Workload ids to run (W1 … W9, sweep, nice-share).
    var selected: Set<String>
    /// Nice share with both queues placed on one CPU (`--same-cpu`).
    var sameCPU = false
    var competitors: [any Competitor]
    var sizes: Sizes
    /// Rounds of the throughput workloads and W8; of W7; of W9 and W12.
    var rounds: Int
    var latencyRounds: Int
    var priorityRounds: Int
    /// Throughput samples repeat the workload back to back until they last this long.
    var minimumSampleNs: Double
    /// The sweep runs Foundation only up to this many ops.
    var foundationCap: Int
}

/// The suite.
enum Suite {
    static func run(_ config: SuiteConfiguration) throws -> SuiteReport {
        let machine = Machine.current
        let throughput = WorkloadCatalog.throughput(config.sizes, cpus: machine.cpuCount).filter { config.selected.contains($0.id) }
        let competitors = config.competitors
        var report = SuiteReport(machine: machine, rounds: config.rounds, sizes: config.sizes)

        try verify(config, machine: machine)

        // With --trace, each workload runs under the runtime's trace (TraceCapture).
        for workload in throughput {
            report.throughput.append(try TraceCapture.around(workload.id) {
                try ThroughputRunner.measure(workload, on: competitors, rounds: config.rounds, minimumSampleNs: config.minimumSampleNs)
            }.0)
        }
        if config.selected.contains(W7Latency.id) {
            report.latency = try TraceCapture.around(W7Latency.id) {
                try W7Latency.run(on: competitors, sizes: config.sizes, rounds: config.latencyRounds)
            }.0
        }
        if config.selected.contains(W8Memory.id) {
            report.memory = try W8Memory.run(on: competitors, operations: config.sizes.memoryOperations, rounds: config.rounds)
        }
        if config.selected.contains(W9Priority.id) {
            report.priority = try TraceCapture.around(W9Priority.id) {
                try TraceCapture.recordingQueueWaits(W9Priority.id) {
                    try W9Priority.run(on: competitors, seconds: config.sizes.prioritySeconds, cpus: machine.cpuCount,
                                       rounds: config.priorityRounds)
                }
            }.0
        }
        if config.selected.contains(W12Inversion.id) {
            report.inversion = try TraceCapture.around(W12Inversion.id) {
                try TraceCapture.recordingQueueWaits(W12Inversion.id) {
                    try W12Inversion.run(on: competitors, seconds: config.sizes.prioritySeconds, cpus: machine.cpuCount,
                                         rounds: config.priorityRounds)
                }
            }.0
        }
        if config.selected.contains(ScalingSweep.id) {
            report.sweep = try ScalingSweep.run(
                on: competitors, rounds: max(3, config.rounds / 2), minimumSampleNs: config.minimumSampleNs,
                foundationCap: config.foundationCap)
        }
        if config.selected.contains(E1Executor.id) {
            report.executor = try E1Executor.run(jobs: config.sizes.executorJobs, rounds: config.rounds, cpus: machine.cpuCount)
        }
        if config.selected.contains(NiceShare.id) {
            report.niceShare = try NiceShare.run(seconds: config.sizes.shareSeconds, cpus: machine.cpuCount,
                                                 sameCPU: config.sameCPU)
        }
        Progress.done()
        report.goals = Goals.check(report)
        return report
    }

    /// Every selected workload once at a small size with counting (or waited-for) bodies; a
    /// wrong count throws, a hang trips the watchdog.
    private static func verify(_ config: SuiteConfiguration, machine: Machine) throws {
        let small = Sizes.verification
        let competitors = config.competitors
        let sweepIds: Set<String> = config.selected.contains(ScalingSweep.id) ? ["W1", "W4", "W5"] : []
        for workload in WorkloadCatalog.throughput(small, cpus: machine.cpuCount) where config.selected.union(sweepIds).contains(workload.id) {
            try ThroughputRunner.verify(workload, on: competitors)
        }
        if config.selected.contains(W7Latency.id) {
            for mode in W7Latency.Mode.allCases {
                _ = try LatencyRunner.measure(workload: "verify W7", scenario: mode.rawValue, on: competitors, rounds: 1) {
                    try W7Latency.sample(mode, count: small.latencySamples / 10, on: $0)
                }
            }
        }
        if config.selected.contains(W8Memory.id) {
            _ = try W8Memory.run(on: competitors, operations: small.memoryOperations, rounds: 1)
        }
        if config.selected.contains(E1Executor.id) {
            _ = try E1Executor.run(jobs: small.executorJobs, rounds: 1, cpus: machine.cpuCount)
        }
        if config.selected.contains(W9Priority.id) {
            for scenario in W9Priority.Case.allCases {
                let runners = W9Priority.competitors(competitors, for: scenario, cpus: machine.cpuCount)
                if runners.isEmpty { continue }
                _ = try LatencyRunner.measure(workload: "verify W9", scenario: scenario.rawValue, on: runners, rounds: 1) {
                    try W9Priority.sample(scenario, seconds: small.prioritySeconds, cpus: machine.cpuCount, on: $0)
                }
            }
        }
        if config.selected.contains(W12Inversion.id) {
            let columns = W12Inversion.contenders(competitors)
            for scenario in W12Inversion.Case.allCases where !columns.isEmpty {
                _ = try LatencyRunner.measure(workload: "verify W12", scenario: scenario.rawValue, on: columns, named: \.name, rounds: 1) {
                    try W12Inversion.sample(scenario, seconds: small.prioritySeconds, cpus: machine.cpuCount, on: $0)
                }
            }
        }
    }
}
