// LatencyRunner.swift — runs one latency scenario (a W7 mode, a W9 or W12 case) on every competitor
// in interleaved rounds under the watchdog, merging each competitor's rounds into one histogram.

/// What one latency sample found: the latencies, and (W9) the nice values bodies ran at.
struct LatencySample {
    var histogram = LatencyHistogram()
    var probeNice: [Int32: Int]? = nil
    var loadNice: [Int32: Int]? = nil
}

/// Interleaved rounds of latency samples.
enum LatencyRunner {
    static func measure(
        workload: String, scenario: String, on competitors: [any Competitor], rounds: Int,
        sample: (any Competitor) throws -> LatencySample
    ) throws -> [LatencyResult] {
        try measure(workload: workload, scenario: scenario, on: competitors, named: \.name, rounds: rounds, sample: sample)
    }

    /// The same over any columns, each named by `name` (W12 runs ours twice).
    static func measure<Column>(
        workload: String, scenario: String, on competitors: [Column], named name: (Column) -> String, rounds: Int,
        sample: (Column) throws -> LatencySample
    ) throws -> [LatencyResult] {
        var merged: [String: LatencySample] = [:]
        var perRound: [String: [LatencySummary]] = [:]
        for round in 0..<rounds {
            for k in 0..<competitors.count {
                let competitor = competitors[(round + k) % competitors.count]
                Progress.show("\(workload) \(scenario): round \(round + 1)/\(rounds) \(name(competitor))")
                let result = try Watchdog.guarding("\(workload) \(scenario) on \(name(competitor))") {
                    try sample(competitor)
                }
                perRound[name(competitor), default: []].append(result.histogram.summary)
                var total = merged[name(competitor)] ?? LatencySample()
                total.histogram.add(result.histogram)
                total.probeNice = combine(total.probeNice, result.probeNice)
                total.loadNice = combine(total.loadNice, result.loadNice)
                merged[name(competitor)] = total
            }
        }
        return competitors.compactMap { competitor in
            guard let total = merged[name(competitor)] else { return nil }
            return LatencyResult(
                workload: workload, scenario: scenario, contender: name(competitor),
                merged: total.histogram.summary, rounds: perRound[name(competitor)] ?? [],
                probeNice: total.probeNice.map(keyedByString), loadNice: total.loadNice.map(keyedByString))
        }
    }

    private static func combine(_ a: [Int32: Int]?, _ b: [Int32: Int]?) -> [Int32: Int]? {
        guard let b else { return a }
        return (a ?? [:]).merging(b, uniquingKeysWith: +)
    }

    private static func keyedByString(_ counts: [Int32: Int]) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: counts.map { ("\($0.key)", $0.value) })
    }
}
