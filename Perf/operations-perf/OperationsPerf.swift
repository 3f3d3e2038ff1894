// OperationsPerf.swift — the `operations-perf` command: runs the workloads of the C core against
// libdispatch in one process, interleaved, and prints medians and ratios.
import ArgumentParser
import OperationsCore

@main
struct OperationsPerf: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operations-perf",
        abstract: "Measures the Operations runtime side by side with libdispatch.",
        discussion: """
            Workloads (each item runs the same C body, a relaxed atomic increment):
              independent  N empty tasks on a default-width queue vs dispatch_group_async_f onto
                           the global queue, then a wait.
              serial       the same on a width-1 queue vs a serial dispatch queue.
              chain        N tasks where task i depends on task i-1, vs a chain of dispatch
                           groups (item i starts from dispatch_group_notify_f on group i-1).
              operations   N/10 empty BlockOperations added one by one to a default-width queue
                           through our Swift API, Foundation's OperationQueue, and dispatch;
                           then heap bytes per BlockOperation queued on a suspended queue.
            Implementations run in the same process in interleaved rounds (A B, B A, ...). Each
            figure is a median over rounds; each ratio (dispatch time / core time) is taken
            within a round, then the median is reported. Before timing, every implementation runs
            1000 items and must count exactly 1000. A watchdog ends a hung run naming the workload.
            Build with -c release for meaningful numbers.
            """)

    @Option(help: "Items per workload.")
    var size = 1_000_000

    @Option(help: "Interleaved rounds per workload.")
    var rounds = 7

    @Flag(help: "A short run: 100 000 items, 3 rounds.")
    var quick = false

    @Flag(help: """
        Also measure cost per task at 10^3 … 10^6 tasks (independent and chain). Sizes below 10^5 \
        run back to back within one timed sample until it holds 10^5 tasks.
        """)
    var sweep = false

    @Option(help: "Run only these workloads (comma-separated names).")
    var only: String?

    @Option(help: "Run only these implementations (comma-separated: core, operations, foundation, dispatch), e.g. to profile one.")
    var contenders: String?

    @Option(help: "Seconds before the watchdog declares a workload hung.")
    var watchdog = 120

    mutating func run() throws {
        if quick {
            size = 100_000
            rounds = 3
        }
        guard size >= 1000, rounds >= 1 else { throw ValidationError("--size >= 1000 and --rounds >= 1") }
        Watchdog.limitSeconds = watchdog
        let timeout = Int64(watchdog) * 1_000_000_000
        var topology = op_topology_t()
        op_runtime_topology(&topology)
        print("operations-perf: \(topology.cpu_count) CPUs, \(topology.node_count) NUMA node(s), "
              + "NUMA \(topology.numa ? "in use" : "not used"); size \(size), \(rounds) rounds")

        var workloads = CoreWorkloads.all(timeout: timeout)
        if let only {
            let names = Set(only.split(separator: ",").map(String.init))
            let unknown = names.subtracting(workloads.map(\.name))
            guard unknown.isEmpty else {
                throw ValidationError("unknown workload(s): \(unknown.sorted().joined(separator: ", "))")
            }
            workloads = workloads.filter { names.contains($0.name) }
        }
        if let contenders {
            let names = Set(contenders.split(separator: ",").map(String.init))
            workloads = workloads.map { workload in
                var kept = workload
                kept.contenders = workload.contenders.filter { names.contains($0.name) }
                return kept
            }.filter { !$0.contenders.isEmpty }
        }
        for workload in workloads { try Runner.verify(workload) }
        var results: [WorkloadResult] = []
        for workload in workloads {
            results.append(try Runner.measure(workload, size: max(1000, size / workload.sizeDivisor), rounds: rounds))
        }
        Progress.done()
        Table.printResults(results)
        if workloads.contains(where: { $0.name == "operations" }) {
            let n = 100_000
            print("heap bytes per BlockOperation queued on a suspended queue (mallinfo2, \(n) ops): "
                  + "operations \(Table.format(QueuedMemory.operations(n))), foundation \(Table.format(QueuedMemory.foundation(n)))")
        }

        if sweep {
            var rows: [WorkloadResult] = []
            for workload in workloads where workload.name == "independent" || workload.name == "chain" {
                for exponent in 3...6 {
                    let n = Int(pow10(exponent))
                    rows.append(try Runner.measure(workload, size: n, rounds: max(3, rounds / 2),
                                                   repetitions: max(1, 100_000 / n)))
                }
            }
            Progress.done()
            Table.printSweep(rows)
        }
    }

    private func pow10(_ exponent: Int) -> Double {
        (0..<exponent).reduce(1.0) { value, _ in value * 10 }
    }
}
