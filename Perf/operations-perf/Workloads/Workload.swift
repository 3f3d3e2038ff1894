// Workload.swift — what a throughput workload is, the sizes of every workload, and the
// catalogue that `--help` prints (each entry's text lives in its workload's file).

/// A workload timed as wall-clock ns over its items (W1–W6, W10, W11 and the sweep's points).
struct ThroughputWorkload: Sendable {
    /// "W1" … "W6".
    let id: String
    /// A short name: "independent", "chain", …
    let name: String
    /// The size in words: "n=100000", "grid 100x100", …
    let size: String
    /// Items one run executes: what verification expects the counter to read.
    let items: Int
    /// CPU work in one item's body, in ns (S1), for efficiency figures; nil for empty bodies.
    var workNsPerItem: Double? = nil
    /// Runs the workload once on a competitor; nil when the competitor has no such call.
    let run: @Sendable (any Competitor, Counter) throws -> UInt64?
}

/// The size of every workload. Defaults make Foundation take about 0.2–2 s per run.
struct Sizes: Codable, Sendable {
    /// W1–W3, W10, W11: operations per run.
    var operations = 100_000
    /// W4: chain length (Foundation's cost per op grows with it).
    var chain = 5_000
    /// W5: the side of the grid.
    var grid = 70
    /// W6: children per round, and rounds.
    var fanOutWidth = 100
    var fanOutRounds = 40
    /// W7: samples per round for idle, and for busy and stream.
    var idleSamples = 300
    var latencySamples = 10_000
    /// W8: operations queued on the suspended queue.
    var memoryOperations = 100_000
    /// W9, W12: seconds of load (and of probes or pairs) per case.
    var prioritySeconds = 1.0
    /// Nice-share: seconds each pair shares the CPUs.
    var shareSeconds = 0.4
    /// S1: ms of task work per CPU in one run.
    var spinWorkMs = 50.0
    /// S3: children per operation, and levels below the root.
    var spawnFan = 10
    var spawnDepth = 5
    /// E1: jobs per run.
    var executorJobs = 100_000

    /// The sizes of the verification runs (small, counted).
    static let verification = Sizes(
        operations: 1000, chain: 1000, grid: 10, fanOutWidth: 8, fanOutRounds: 4, idleSamples: 20,
        latencySamples: 200, memoryOperations: 1000, prioritySeconds: 0.05, shareSeconds: 0.05,
        spinWorkMs: 1, spawnFan: 4, spawnDepth: 3, executorJobs: 200)

    /// `--quick`: about a tenth of the default.
    static let quick = Sizes(
        operations: 20_000, chain: 1_000, grid: 30, fanOutWidth: 50, fanOutRounds: 10, idleSamples: 100,
        latencySamples: 2_000, memoryOperations: 20_000, prioritySeconds: 0.2, shareSeconds: 0.15,
        spinWorkMs: 10, spawnFan: 10, spawnDepth: 4, executorJobs: 20_000)
}

/// Every workload's id and help text, for `--help` and `--only`.
enum WorkloadCatalog {
    static let entries: [(id: String, help: String)] = [
        (W1Independent.id, W1Independent.help),
        (W2Serial.id, W2Serial.help),
        (W3Batch.id, W3Batch.help),
        (W4Chain.id, W4Chain.help),
        (W5Wavefront.id, W5Wavefront.help),
        (W6FanOutFanIn.id, W6FanOutFanIn.help),
        (W7Latency.id, W7Latency.help),
        (W8Memory.id, W8Memory.help),
        (W9Priority.id, W9Priority.help),
        (W10ByHand.id, W10ByHand.help),
        (W11HandOff.id, W11HandOff.help),
        (W12Inversion.id, W12Inversion.help),
        (S1Speedup.id, S1Speedup.help),
        (S2Producers.id, S2Producers.help),
        (S3Spawn.id, S3Spawn.help),
        (E1Executor.id, E1Executor.help),
        (ScalingSweep.id, ScalingSweep.help),
        (NiceShare.id, NiceShare.help),
    ]

    /// The ids the default suite runs.
    static let defaultSuite = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12", "S1", "S2", "S3", "E1"]

    /// The default suite as `--help` names it: "W1-W11, S1-S3 and E1".
    static var defaultSuiteText: String {
        var groups: [(prefix: Character, numbers: [Int])] = []
        for id in defaultSuite {
            guard let prefix = id.first, let number = Int(id.dropFirst()) else { continue }
            if let last = groups.indices.last, groups[last].prefix == prefix, groups[last].numbers.last == number - 1 {
                groups[last].numbers.append(number)
            } else {
                groups.append((prefix, [number]))
            }
        }
        let names = groups.map { group in
            group.numbers.count == 1 ? "\(group.prefix)\(group.numbers[0])"
                : "\(group.prefix)\(group.numbers[0])-\(group.prefix)\(group.numbers.last!)"
        }
        return names.count > 1 ? names.dropLast().joined(separator: ", ") + " and " + names.last! : names.joined()
    }

    /// The catalogue as `--help` prints it: each entry re-wrapped to 78 columns under its id.
    static var helpText: String {
        entries.map { entry in
            var lines: [String] = []
            var line = entry.id.padding(11)
            for word in entry.help.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
                if line.count + word.count > 78 && !line.trimmingTrailingSpaces.isEmpty && line.count > 11 {
                    lines.append(line.trimmingTrailingSpaces)
                    line = String(repeating: " ", count: 11)
                }
                line += word + " "
            }
            lines.append(line.trimmingTrailingSpaces)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// The throughput workloads (W1–W6, W10, W11, S1–S3) at `sizes`, for a process of `cpus`.
    static func throughput(_ sizes: Sizes, cpus: Int) -> [ThroughputWorkload] {
        [
            W1Independent.workload(sizes.operations),
            W2Serial.workload(sizes.operations),
            W3Batch.workload(sizes.operations),
            W4Chain.workload(sizes.chain),
            W5Wavefront.workload(sizes.grid),
            W6FanOutFanIn.workload(width: sizes.fanOutWidth, rounds: sizes.fanOutRounds),
            W10ByHand.workload(sizes.operations),
            W11HandOff.workload(sizes.operations),
        ] + S1Speedup.workloads(cpus: cpus, workMsPerCPU: sizes.spinWorkMs) + [
            S2Producers.workload(sizes.operations, producers: cpus),
            S3Spawn.workload(fan: sizes.spawnFan, depth: sizes.spawnDepth),
        ]
    }
}

extension String {
    /// The string padded with spaces to `width` (one space after it when longer).
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
