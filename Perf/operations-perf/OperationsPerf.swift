// OperationsPerf.swift — the `operations-perf` command: its options, and what it does with a
// run's report (table on stdout, --json, --svg).
import ArgumentParser
import DispatchBaselines
import Glibc

@main
struct OperationsPerf: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operations-perf",
        abstract: "Measures the Operations runtime against Foundation's OperationQueue and libdispatch.",
        discussion: """
            Contenders: operations (our Swift API: Operations.BlockOperation on
            Operations.OperationQueue), core (our C API: op_queue_submit_f,
            op_task_create), foundation (Foundation.OperationQueue), dispatch (plain
            libdispatch through its C API), swift-dispatch (Swift's DispatchQueue and
            DispatchGroup with closures: what Swift code writes without operation
            queues; no operation objects, no width, no placement). Every item runs the
            same C body. They run in the same process
            in interleaved rounds (A B C D, B C D A, ...); each figure is a median over
            rounds and each ratio is taken within a round. Throughput samples repeat a
            workload back to back until they last --min-sample-ms. Before timing, every
            workload runs once small with items that count themselves (a wrong count
            fails the run); a watchdog turns a hang into an error naming the workload.
            Build with -c release.

            --cpus 2,4,8,16 runs the selection once per CPU count, each in a child
            process pinned to that many CPUs (--pin-cpus), and adds a table and a chart
            (cpus.svg) of ns/op against CPUs.

            Output: the tables on stdout; --svg DIR adds the charts, --json FILE every
            round. --goals adds the design goals (targets, not failures), checked against
            this run's figures.

            Exit status: 0 the run completed (timings never fail a run); 1 a workload
            counted wrong or a setup failed; 2 with --goals, the run completed and at
            least one goal was missed; 3 the watchdog found a hang; 64 bad options.

            Workloads (the default suite is \(WorkloadCatalog.defaultSuiteText); the sweep
            and nice-share run only when asked for):
            \(WorkloadCatalog.helpText)
            """)

    /// The exit status of a completed run with --goals when a goal was missed.
    static let goalsMissedExitCode: Int32 = 2

    @Flag(help: "A short run (under 20 s): smaller sizes, 3 rounds.")
    var quick = false

    @Flag(help: ArgumentHelp(
        "Also print the design goals (targets, not failures) against this run's figures; exit status 2 when one is missed."))
    var goals = false

    @Option(help: "Interleaved rounds of W1-W6, W8, W10, W11, S1-S3 and E1 (default 5; --quick 3).")
    var rounds: Int?
    @Option(help: "Interleaved rounds of W7 (default 3; --quick 2).")
    var latencyRounds: Int?
    @Option(help: "Rounds of W9 and W12.")
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
    @Option(help: "W9, W12: seconds of load and probes (pairs) per case (default 1.0).")
    var prioritySeconds: Double?
    @Option(help: "Nice share: seconds per pair (default 0.4).")
    var shareSeconds: Double?
    @Option(help: "S1: ms of task work per CPU in one run (default 50; --quick 10).")
    var spinWorkMs: Double?
    @Option(help: "S3: children each operation above the leaves adds (default 10).")
    var spawnFan: Int?
    @Option(help: "S3: levels below the root (default 5; --quick 4).")
    var spawnDepth: Int?
    @Option(help: "E1: jobs per run (default 100000; --quick 20000).")
    var executorJobs: Int?
    @Option(help: "Sweep: Foundation runs only up to this many ops.")
    var foundationCap = 100_000

    @Flag(help: "Also run the scaling sweep (W1, W4, W5 at 10^3 ... 10^6 ops).")
    var sweep = false
    @Flag(help: "Also run the thread-priority experiment (CPU share per nice value).")
    var niceShare = false
    @Flag(help: "Nice share with both queues placed on one CPU (implies --nice-share).")
    var sameCpu = false
    @Option(help: "Run only these workloads (comma-separated ids from the list below: W1 ... W11, S1 ... S3, E1, sweep, nice-share).")
    var only: String?
    @Option(help: "Run only these contenders (comma-separated: operations, core, foundation, dispatch, swift-dispatch).")
    var contenders: String?

    @Option(help: ArgumentHelp(
        "Run the selected workloads once per CPU count (comma-separated, e.g. 2,4,8,16), each in a child process restricted to that many CPUs; prints and charts ns/op and ratios per CPU count.",
        valueName: "list"))
    var cpus: String?
    @Option(help: "Restrict this process to the first N CPUs of its affinity mask before anything runs (what --cpus gives each child).")
    var pinCpus: Int?
    /// The `--cpus` parent's process id, given to each child: the child stops when its parent does.
    @Option(help: .hidden)
    var parentPid: Int32?

    @Option(help: ArgumentHelp(
        "Run beside N CPU hogs: busy processes at nice 0, unpinned, for the whole run (the noisy neighbour of a shared machine); the header says so. With --cpus each child runs its own, on its CPUs.",
        valueName: "N"))
    var hog = 0
    @Option(help: ArgumentHelp(
        "Pin the --hog processes to these CPUs, round robin (comma-separated CPU ids): which CPU the neighbour takes, instead of the kernel's choice.",
        valueName: "list"))
    var hogCpus: String?
    /// The body of one hog process (started by --hog).
    @Flag(help: .hidden)
    var hogChild = false
    /// E1's child with our workers as Swift's global executor (started by E1): its jobs per
    /// sample; with --rounds.
    @Option(help: .hidden)
    var globalExecutorChild: Int?

    @Option(help: "Write every round of every figure to this JSON file.")
    var json: String?
    @Option(help: "Write SVG charts into this directory (created if missing).")
    var svg: String?
    @Option(help: ArgumentHelp(
        "Trace each workload (the runtime's flight recorder) into this directory: <workload>.json for ui.perfetto.dev and <workload>.svg; W9 and W12 also record the latency histograms (queue-wait.svg); nice-share reads each body's nice from its trace. Timings include the recording's cost."))
    var trace: String?
    @Option(help: "Seconds before the watchdog declares a run hung.")
    var watchdog = 120

    mutating func run() throws {
        if let parentPid {
            // A child of --cpus: a parent stopped by a time limit must not leave it running.
            let rc = perf_exit_with_parent(parentPid)
            if rc == ESRCH { throw ExitCode.failure }
            if rc != 0 { writeStandardError("operations-perf: this child would outlive its parent (prctl error \(rc))\n") }
        }
        if hogChild { CPUHogs.runChild() }
        if let globalExecutorChild { E1Executor.runGlobalExecutorChild(jobs: globalExecutorChild, rounds: rounds ?? 5) }
        guard hog >= 0 else { throw ValidationError("--hog must be >= 0") }
        let hogPins = try (hogCpus ?? "").split(separator: ",").map { item -> Int in
            guard let cpu = Int(item), cpu >= 0 else { throw ValidationError("--hog-cpus: '\(item)' is not a CPU id") }
            return cpu
        }
        if !hogPins.isEmpty && hog == 0 { throw ValidationError("--hog-cpus needs --hog N") }
        if let pinCpus {
            // Before the runtimes start any thread: every thread after this inherits the mask.
            let rc = perf_restrict_to_cpus(Int32(pinCpus))
            guard rc == 0 else {
                throw ValidationError("--pin-cpus \(pinCpus): the process has \(perf_affinity_cpu_count()) CPUs (error \(rc))")
            }
        }
        if let cpus {
            CPUHogs.noteChildrenRunBeside(hog, pinnedTo: hogPins)
            let met = try CPUCountRuns.run(counts: try CPUCountRuns.parse(cpus), json: json, svg: svg, goals: goals)
            if !met { throw ExitCode(Self.goalsMissedExitCode) }
            return
        }
        let config = try configuration()
        try CPUHogs.start(hog, pinnedTo: hogPins)
        defer { CPUHogs.stop() }
        TraceCapture.directory = trace
        Watchdog.limitSeconds = watchdog
        Progress.start()
        print("operations-perf: \(Machine.current.description)")
        print("workloads \(WorkloadCatalog.entries.map(\.id).filter(config.selected.contains).joined(separator: " ")); contenders "
              + config.competitors.map(\.name).joined(separator: " ") + "; \(config.rounds) rounds"
              + (quick ? " (--quick)" : ""))
        var report = try Suite.run(config)
        report.wallSeconds = Progress.elapsedSeconds
        Table.print(report)
        if goals { Table.goalRows(report.goals) }
        try TraceCapture.finish()
        if let trace { print("\ntraces: \(trace)/<workload>.json (open in ui.perfetto.dev), pictures <workload>.svg") }
        if let json { try JSONReport.write(report, to: json) }
        if let svg {
            let files = try Charts.write(report, to: svg)
            print("\ncharts: " + files.joined(separator: ", "))
        }
        print("\nwall time \(Table.fixed(report.wallSeconds, 1)) s")
        if goals && report.goals.contains(where: { !$0.met }) { throw ExitCode(Self.goalsMissedExitCode) }
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
        set(spinWorkMs, \.spinWorkMs)
        set(spawnFan, \.spawnFan)
        set(spawnDepth, \.spawnDepth)
        set(executorJobs, \.executorJobs)
        guard sizes.operations >= 1, sizes.chain >= 1, sizes.grid >= 1, sizes.fanOutWidth >= 1, sizes.fanOutRounds >= 1,
              sizes.idleSamples >= 1, sizes.latencySamples >= 1, sizes.memoryOperations >= 1,
              sizes.prioritySeconds > 0, sizes.shareSeconds > 0, sizes.spinWorkMs > 0, sizes.spawnFan >= 2,
              sizes.spawnDepth >= 0, sizes.executorJobs >= 1, S3Spawn.items(fan: sizes.spawnFan, depth: sizes.spawnDepth) <= 100_000_000
        else { throw ValidationError("sizes must be positive (--spawn-fan at least 2, the tree at most 10^8 operations)") }

        let known = Set(WorkloadCatalog.entries.map(\.id))
        var selected = Set(WorkloadCatalog.defaultSuite)
        if let only {
            selected = Set(only.split(separator: ",").map(String.init))
            let unknown = selected.subtracting(known)
            guard unknown.isEmpty else { throw ValidationError("unknown workload(s): \(unknown.sorted().joined(separator: ", "))") }
        }
        if sweep { selected.insert(ScalingSweep.id) }
        if niceShare || sameCpu { selected.insert(NiceShare.id) }

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
        var configuration = SuiteConfiguration(
            selected: selected, competitors: competitors, sizes: sizes, rounds: rounds,
            latencyRounds: latencyRounds ?? (quick ? 2 : 3), priorityRounds: priorityRounds,
            minimumSampleNs: (minSampleMs ?? (quick ? 20 : 100)) * 1e6, foundationCap: foundationCap)
        configuration.sameCPU = sameCpu
        return configuration
    }
}
