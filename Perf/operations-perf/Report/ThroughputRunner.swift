// ThroughputRunner.swift — runs a throughput workload on every competitor in one process:
// verification at a small size, one warm-up run that sets back-to-back repetitions, then
// interleaved rounds (A B C D, B C D A, …) under the watchdog, counting every item.

/// Verifies and measures throughput workloads.
enum ThroughputRunner {
    /// Runs the workload once on each competitor and fails loudly on a wrong count.
    static func verify(_ workload: ThroughputWorkload, on competitors: [any Competitor]) throws {
        for competitor in competitors {
            Progress.show("verify \(workload.id) \(workload.name) \(workload.size): \(competitor.name)")
            _ = try countedRun(workload, on: competitor, repetitions: 1)
        }
    }

    /// Medians over `rounds` interleaved rounds; each sample repeats the workload back to back
    /// until it lasts `minimumSampleNs` (measured in a warm-up run).
    static func measure(
        _ workload: ThroughputWorkload, on competitors: [any Competitor], rounds: Int, minimumSampleNs: Double
    ) throws -> ThroughputResult {
        var repetitions: [String: Int] = [:]
        var applicable: [any Competitor] = []
        for competitor in competitors {
            Progress.show("\(workload.id) \(workload.name) \(workload.size): warm-up \(competitor.name)")
            guard let ns = try countedRun(workload, on: competitor, repetitions: 1) else { continue }
            applicable.append(competitor)
            repetitions[competitor.name] = max(1, min(1000, Int((minimumSampleNs / Double(max(ns, 1))).rounded(.up))))
        }
        var result = ThroughputResult(
            id: workload.id, name: workload.name, size: workload.size, items: workload.items,
            workNsPerItem: workload.workNsPerItem, contenders: applicable.map(\.name), repetitions: repetitions, rounds: [])
        for round in 0..<rounds {
            var record = ThroughputRound(order: [], nsPerItem: [:])
            for k in 0..<applicable.count {
                let competitor = applicable[(round + k) % applicable.count]
                let reps = repetitions[competitor.name] ?? 1
                Progress.show("\(workload.id) \(workload.name) \(workload.size): round \(round + 1)/\(rounds) \(competitor.name)")
                let ns = try countedRun(workload, on: competitor, repetitions: reps) ?? 0
                record.order.append(competitor.name)
                record.nsPerItem[competitor.name] = Double(ns) / Double(workload.items * reps)
            }
            result.rounds.append(record)
        }
        return result
    }

    /// `repetitions` runs back to back under the watchdog; total ns, or nil when the competitor
    /// has no such call. Throws when the items counted differ from the items run.
    private static func countedRun(
        _ workload: ThroughputWorkload, on competitor: any Competitor, repetitions: Int
    ) throws -> UInt64? {
        let counter = Counter()
        defer { counter.free() }
        let total: UInt64? = try Watchdog.guarding("\(workload.id) \(workload.name) \(workload.size) on \(competitor.name)") {
            var total: UInt64 = 0
            for _ in 0..<repetitions {
                guard let ns = try workload.run(competitor, counter) else { return nil }
                total += ns
            }
            return total
        }
        let expected = total == nil ? 0 : workload.items * repetitions
        guard counter.value == Int64(expected) else {
            throw PerfError.wrongCount(workload: "\(workload.id) \(workload.name) \(workload.size)",
                                       implementation: competitor.name, expected: expected, got: counter.value)
        }
        return total
    }
}
