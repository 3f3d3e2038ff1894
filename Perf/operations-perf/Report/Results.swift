// Results.swift — what a run found, as Codable values: the table, the JSON file and the charts
// all read these. Every round is kept; figures are medians over rounds, ratios are taken
// within a round and then their median is reported.

/// Everything one run measured (the `--json` file).
struct SuiteReport: Codable {
    var machine: Machine
    var rounds: Int
    var sizes: Sizes
    var throughput: [ThroughputResult] = []
    var latency: [LatencyResult] = []
    var memory: [MemoryResult] = []
    var priority: [LatencyResult] = []
    var inversion: [LatencyResult] = []
    var sweep: [ThroughputResult] = []
    var niceShare: [NiceShareResult] = []
    var executor: [ExecutorResult] = []
    var goals: [GoalCheck] = []
    var wallSeconds = 0.0
}

/// One throughput workload (W1–W6, W10, W11, or one size of the sweep) on every competitor.
struct ThroughputResult: Codable {
    var id: String
    var name: String
    var size: String
    var items: Int
    /// CPU work in one item's body, in ns (S1); nil for empty bodies.
    var workNsPerItem: Double? = nil
    /// Competitors that ran it, in table order.
    var contenders: [String]
    /// Runs back to back per timed sample, per competitor.
    var repetitions: [String: Int]
    var rounds: [ThroughputRound]

    /// Median ns per item of `contender` over the rounds.
    func median(_ contender: String) -> Double {
        rounds.compactMap { $0.nsPerItem[contender] }.median
    }

    /// Median over rounds of (`reference`'s time / `contender`'s time) in the same round:
    /// above 1 means `contender` is faster.
    func speedup(_ contender: String, over reference: String = "dispatch") -> Double {
        rounds.compactMap { round in
            guard let ours = round.nsPerItem[contender], let theirs = round.nsPerItem[reference] else { return nil }
            return theirs / ours
        }.median
    }
}

/// One interleaved round: the order the competitors ran in, and ns per item of each.
struct ThroughputRound: Codable {
    var order: [String]
    var nsPerItem: [String: Double]
}

/// One latency scenario (a W7 mode or a W9 case) on one competitor.
struct LatencyResult: Codable {
    var workload: String
    var scenario: String
    var contender: String
    /// All rounds' samples in one histogram.
    var merged: LatencySummary
    /// Each round on its own.
    var rounds: [LatencySummary]
    /// W9: how many probes / load items ran at each nice value.
    var probeNice: [String: Int]? = nil
    var loadNice: [String: Int]? = nil

    /// Median over rounds of (`reference`'s p50 / this p50), rounds paired by index.
    func p50Speedup(over reference: LatencyResult) -> Double {
        zip(rounds, reference.rounds).map { Double($1.p50) / Double(max($0.p50, 1)) }.median
    }
}

/// W8 on one competitor.
struct MemoryResult: Codable {
    var contender: String
    var operations: Int
    var rounds: [MemoryRound]

    func median(_ figure: KeyPath<MemoryRound, Double>) -> Double { rounds.map { $0[keyPath: figure] }.median }
}

/// One W8 round: per queued operation.
struct MemoryRound: Codable {
    var heapBytes: Double
    var residentBytes: Double
    var enqueueNs: Double
    var drainNs: Double
}

/// One pair of the nice-share experiment.
struct NiceShareResult: Codable {
    var label: String
    var sides: [ShareSide]
    /// |measured − predicted| / predicted for the side with the smaller predicted share.
    var relativeError: Double
}

/// One side of a nice-share pair.
struct ShareSide: Codable {
    var label: String
    var nice: Int32
    var cpuSeconds: Double
    var share: Double
    var predictedShare: Double
    /// The nice values its bodies ran at per the runtime's trace (--trace), else nil.
    var tracedNice: [Int]? = nil
}

/// One of the goals, checked against this run.
struct GoalCheck: Codable {
    var goal: String
    var measured: String
    var met: Bool
}
