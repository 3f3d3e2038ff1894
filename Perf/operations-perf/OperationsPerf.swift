// OperationsPerf.swift — the `operations-perf` command: its options, and what it does with a
// run's report (table on stdout, --json, --svg).
import ArgumentParser

@main
struct OperationsPerf: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operations-perf",
        abstract: "Measures the Operations runtime against Foundation's OperationQueue and libdispatch.",
        discussion: """
            Contenders: operations (our Swift API: Operations.BlockOperation on
            Operations.OperationQueue), core (our C API: op_queue_submit_f,
            op_task_create), foundation (Foundation.OperationQueue), dispatch (plain
            libdispatch). Every item runs the same C body. They run in the same process
            in interleaved rounds (A B C D, B C D A, ...); each figure is a median over
            rounds and each ratio is taken within a round. Throughput samples repeat a
            workload back to back until they last --min-sample-ms. Before timing, every
            workload runs once small with items that count themselves (a wrong count
            fails the run); a watchdog turns a hang into an error naming the workload.
            Build with -c release.

            Workloads (the default suite is W1-W11):
            \(WorkloadCatalog.helpText)
            """)

    @Flag(help: "A short run (under 20 s): smaller sizes, 3 rounds.")
    var quick = false

    @Option(help: "Interleaved rounds of W1-W6, W8, W10, W11 (default 5; --quick 3).")
    var rounds: Int?
    @Option(help: "Interleaved rounds of W7 (default 3; --quick 2).")
    var latencyRounds: Int?
    @Option(help: "Rounds of W9.")
    var priorityRounds = 1
    @Option(help: "Minimum ms per throughput sample; faster runs repeat back to back (default 100; --quick 20).")
    var minSampleMs: Double?

    @Option(help: "W1-W3, W10, W11: operations per run (default 100000).")
    var operations: Int?
    @Option(help: "W4: chain length (default 5000).")
    var chain: Int?
    @Option(help: "W5: grid side G, GxG operations (default 70).")
    var grid: Int?
    @Option(help: "W6: children per round K (default 100).")
    var fanOut: Int?
    @Option(help: "W6: rounds R (default 40).")
    var fanRounds: Int?
    @Option(help: "W7: idle probes per round (default 300).")
    var idleSamples: Int?
    @Option(help: "W7: busy and stream probes per round (default 10000).")
    var latencySamples: Int?
    @Option(help: "W8: operations on the suspended queue (default 100000).")
    var memoryOperations: Int?
    @Option(help: "W9: seconds of load and probes per case (default 1.0).")
    var prioritySeconds: Double?
    @Option(help: "Nice share: seconds per pair (default 0.4).")
    var shareSeconds: Double?
    @Option(help: "Sweep: Foundation runs only up to this many ops.")
    var foundationCap = 100_000

    @Flag(help: "Also run the scaling sweep (W1, W4, W5 at 10^3 ... 10^6 ops).")
    var sweep = false
    @Flag(help: "Also run the thread-priority experiment (CPU share per nice value).")
    var niceShare = false
    @Option(help: "Run only these workloads (comma-separated: W1 ... W11, sweep, nice-share).")
    var only: String?
    @Option(help: "Run only these contenders (comma-separated: operations, core, foundation, dispatch).")
    var contenders: String?

    @Option(help: "Write every round of every figure to this JSON file.")
    var json: String?
    @Option(help: "Write SVG charts into this directory (created if missing).")
    var svg: String?
    @Option(help: "Seconds before the watchdog declares a run hung.")
    var watchdog = 120

    mutating func run() throws {
        let config = try configuration()
        Watchdog.limitSeconds = watchdog
        Progress.start()
        print("operations-perf: \(Machine.current.description)")
        print("workloads \(WorkloadCatalog.entries.map(\.id).filter(config.selected.contains).joined(separator: " ")); contenders "
              + config.competitors.map(\.name).joined(separator: " ") + "; \(config.rounds) rounds"
              + (quick ? " (--quick)" : ""))
        var report = try Suite.run(config)
        report.wallSeconds = Progress.elapsedSeconds
        Table.print(report)
        if let json { try JSONReport.write(report, to: json) }
        if let svg {
            let files = try Charts.write(report, to: svg)
            print("\ncharts: " + files.joined(separator: ", "))
        }
        print("\nwall time \(Table.fixed(report.wallSeconds, 1)) s")
    }

    /// The options resolved into sizes, selection and contenders.
    private func configuration() throws -> SuiteConfiguration {
        var sizes = quick ? Sizes.quick : Sizes()
        func set<T>(_ value: T?, _ path: WritableKeyPath<Sizes, T>) { if let value { sizes[keyPath: path] = value } }
        set(operations, \.operations)
        set(chain, \.chain)
        set(grid, \.grid)
        set(fanOut, \.fanOutWidth)
        set(fanRounds, \.fanOutRounds)
        set(idleSamples, \.idleSamples)
        set(latencySamples, \.latencySamples)
        set(memoryOperations, \.memoryOperations)
        set(prioritySeconds, \.prioritySeconds)
        set(shareSeconds, \.shareSeconds)
        guard sizes.operations >= 1, sizes.chain >= 1, sizes.grid >= 1, sizes.fanOutWidth >= 1, sizes.fanOutRounds >= 1,
              sizes.idleSamples >= 1, sizes.latencySamples >= 1, sizes.memoryOperations >= 1,
              sizes.prioritySeconds > 0, sizes.shareSeconds > 0
        else { throw ValidationError("sizes must be positive") }

        let known = Set(WorkloadCatalog.entries.map(\.id))
        var selected = Set(WorkloadCatalog.defaultSuite)
        if let only {
            selected = Set(only.split(separator: ",").map(String.init))
            let unknown = selected.subtracting(known)
            guard unknown.isEmpty else { throw ValidationError("unknown workload(s): \(unknown.sorted().joined(separator: ", "))") }
        }
        if sweep { selected.insert(ScalingSweep.id) }
        if niceShare { selected.insert(NiceShare.id) }

        var competitors = Competitors.all
        if let contenders {
            let names = Set(contenders.split(separator: ",").map(String.init))
            let unknown = names.subtracting(competitors.map(\.name))
            guard unknown.isEmpty else { throw ValidationError("unknown contender(s): \(unknown.sorted().joined(separator: ", "))") }
            competitors = competitors.filter { names.contains($0.name) }
        }
        let rounds = rounds ?? (quick ? 3 : 5)
        guard rounds >= 1, priorityRounds >= 1, (latencyRounds ?? 1) >= 1 else { throw ValidationError("rounds must be >= 1") }
        guard watchdog >= 1 else { throw ValidationError("--watchdog must be >= 1") }
        return SuiteConfiguration(
            selected: selected, competitors: competitors, sizes: sizes, rounds: rounds,
            latencyRounds: latencyRounds ?? (quick ? 2 : 3), priorityRounds: priorityRounds,
            minimumSampleNs: (minSampleMs ?? (quick ? 20 : 100)) * 1e6, foundationCap: foundationCap)
    }
}
