// CPUCountRuns.swift — `--cpus 2,4,8,16`: the selected workloads once per CPU count, each in a
// child process of this same binary restricted to that many CPUs (`--pin-cpus N`, the first N
// of the parent's mask), which prints its own tables and hands its report back as JSON. Then
// one table and one chart (cpus.svg) of ns/op and ratios against the CPU count.
import DispatchBaselines
import Foundation

/// The reports of one `--cpus` run, one per CPU count (the `--json` file in that mode).
struct CPUCountReport: Codable {
    var machine: Machine
    /// The CPU counts asked for; `runs` holds those finished (fewer in a run cut short, whose
    /// `goals` then cover only those). Optional: reports written before it have none.
    var countsAsked: [Int]?
    var runs: [CPUCountRun]
    var goals: [GoalCheck] = []
}

/// One child's run.
struct CPUCountRun: Codable {
    var cpus: Int
    var report: SuiteReport
}

/// Runs the children and reports across them.
enum CPUCountRuns {
    /// "2,4,8,16" as CPU counts, each between 1 and the process's CPUs.
    static func parse(_ list: String) throws -> [Int] {
        let available = Int(perf_affinity_cpu_count())
        let counts = try list.split(separator: ",").map { item -> Int in
            guard let count = Int(item.trimmingCharacters(in: .whitespaces)), count >= 1 else {
                throw PerfError.setup("--cpus: '\(item)' is not a CPU count")
            }
            guard count <= available else {
                throw PerfError.setup("--cpus: \(count) CPUs asked, but this process may run on \(available)")
            }
            return count
        }
        guard !counts.isEmpty else { throw PerfError.setup("--cpus: empty list") }
        return counts
    }

    /// Returns whether every goal was met (always true without `goals`). With `goals`, each
    /// child prints its own goals and exits with status 2 when it missed one.
    static func run(counts: [Int], json: String?, svg: String?, goals showGoals: Bool) throws -> Bool {
        var childMissedGoals = false
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let passed = passedArguments(Array(CommandLine.arguments.dropFirst()))
        var report = CPUCountReport(machine: Machine.current, countsAsked: counts, runs: [])
        print("operations-perf --cpus \(counts.map(String.init).joined(separator: ",")): one child per CPU count; "
              + "machine \(Machine.current.description)")
        for count in counts {
            let file = FileManager.default.temporaryDirectory
                .appendingPathComponent("operations-perf-\(getpid())-\(count).json").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            print("\n==== \(count) CPU\(count == 1 ? "" : "s"): operations-perf --pin-cpus \(count) " + passed.joined(separator: " "))
            fflush(nil) // the header before the child's own output (nil: every output stream)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["--pin-cpus", "\(count)", "--json", file, "--parent-pid", "\(getpid())"] + passed
            try child.run()
            child.waitUntilExit()
            let missedGoals = showGoals && child.terminationStatus == OperationsPerf.goalsMissedExitCode
            guard child.terminationReason == .exit, child.terminationStatus == 0 || missedGoals else {
                throw PerfError.setup("the child run on \(count) CPUs failed (status \(child.terminationStatus))")
            }
            childMissedGoals = childMissedGoals || missedGoals
            report.runs.append(CPUCountRun(cpus: count, report: try JSONReport.read(SuiteReport.self, from: file)))
            report.goals = goals(report.runs)
            // After every CPU count, so that a run stopped by a time limit keeps what it measured.
            try write(report, json: json, svg: svg)
        }
        CPUCountTable.print(report)
        if let svg { print("\ncharts: \((svg as NSString).appendingPathComponent("cpus.svg"))") }
        guard showGoals else { return true }
        Table.goalRows(report.goals, across: "across CPU counts")
        if childMissedGoals { print("(a run at one CPU count missed goals: see its own list above)") }
        return !childMissedGoals && report.goals.allSatisfy(\.met)
    }

    /// Writes the JSON report and the chart of the CPU counts run so far, where asked for.
    private static func write(_ report: CPUCountReport, json: String?, svg: String?) throws {
        if let json { try JSONReport.write(report, to: json) }
        if let svg {
            try FileManager.default.createDirectory(atPath: svg, withIntermediateDirectories: true)
            try CPUCountChart.svg(report.runs).write(to: (svg as NSString).appendingPathComponent("cpus.svg"))
        }
    }

    /// The parent's arguments for its children: without --cpus, --pin-cpus, --json, --svg and
    /// --parent-pid (each child gets its own --pin-cpus, --json and --parent-pid; the parent
    /// writes the charts).
    static func passedArguments(_ arguments: [String]) -> [String] {
        let dropped: Set<String> = ["--cpus", "--pin-cpus", "--json", "--svg", "--parent-pid"]
        var passed: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if dropped.contains(name) {
                index += argument.contains("=") ? 1 : 2
                continue
            }
            passed.append(argument)
            index += 1
        }
        return passed
    }

    /// The same throughput figure across the runs: one key per workload id and its position
    /// among results of that id (S1 has three; sizes that depend on the CPU count still match).
    static func keyedResults(_ report: SuiteReport) -> [(key: String, result: ThroughputResult)] {
        var seen: [String: Int] = [:]
        return report.throughput.map { result in
            let position = seen[result.id, default: 0]
            seen[result.id] = position + 1
            return ("\(result.id)#\(position)", result)
        }
    }

    /// Goals across CPU counts: W1's ns/op flat for our contenders (max/min <= 1.5).
    static func goals(_ runs: [CPUCountRun]) -> [GoalCheck] {
        guard runs.count > 1 else { return [] }
        var checks: [GoalCheck] = []
        for name in Goals.ours {
            let costs = runs.compactMap { run in run.report.throughput.first { $0.id == "W1" }?.median(name) }
                .filter(\.isFinite)
            guard costs.count == runs.count, let low = costs.min(), let high = costs.max() else { continue }
            checks.append(GoalCheck(
                goal: "W1 \(name) flat ns/op across CPU counts (max/min <= 1.5)",
                measured: "\(Table.format(low))-\(Table.format(high)) ns/op, max/min \(Table.ratio(high / low))",
                met: high / low <= 1.5))
        }
        return checks
    }
}
