// Table.swift — the results table on stdout: one section per workload family; the goals
// (--goals) come after the tables.

/// Prints a `SuiteReport` as plain-text tables.
enum Table {
    static func print(_ report: SuiteReport) {
        if !report.throughput.isEmpty {
            section("Throughput: ns per op, median of \(report.rounds) interleaved rounds; "
                    + "xdispatch = dispatch's time / its time in the same round (median; above 1 is faster)")
            throughputRows(report.throughput)
            efficiencyRows(report.throughput, cpus: report.machine.cpuCount)
        }
        if !report.latency.isEmpty {
            section("W7 latency, submit call to first instruction, µs (all rounds in one HdrHistogram)")
            latencyRows(report.latency, nice: false)
        }
        if !report.memory.isEmpty {
            section("W8 memory per op queued on a suspended queue (\(report.memory[0].operations) ops; medians)")
            row(["contender", "heap B/op", "RSS B/op", "enqueue ns/op", "drain ns/op"], [12, 11, 10, 15, 12])
            for result in report.memory {
                row([result.contender, format(result.median(\.heapBytes)), format(result.median(\.residentBytes)),
                     format(result.median(\.enqueueNs)), format(result.median(\.drainNs))], [12, 11, 10, 15, 12])
            }
        }
        if !report.priority.isEmpty {
            section("W9 userInteractive probe latency under background load, µs; nice values the bodies ran at")
            latencyRows(report.priority, nice: true)
        }
        if !report.inversion.isEmpty {
            section("W12 priority inversion: background item's submit to its userInteractive waiter's end, µs; "
                    + "nice values (probe: the waiters, load: the background items)")
            latencyRows(report.inversion, nice: true, scenarioWidth: 21, contenderWidth: 26)
        }
        if !report.sweep.isEmpty {
            section("Scaling sweep: ns per op at each size (median)")
            throughputRows(report.sweep)
        }
        if !report.executor.isEmpty {
            section("E1 executor jobs: ns per job, median of \(report.rounds) rounds; xdefault, xdispatch = their time / ours (same round; "
                    + "the row 'ours as global executor' runs in a child process after the others: its ratios pair its rounds with "
                    + "those of 'round trip from default', measured before it)")
            let widths = [max(25, report.executor.map { $0.scenario.count + 1 }.max() ?? 0), 8, 11, 11, 11, 9, 9]
            row(["scenario", "jobs", "operations", "default", "dispatch", "xdefault", "xdispatch"], widths)
            for result in report.executor {
                row([result.scenario, "\(result.jobs)", format(result.median("operations")), format(result.median("default")),
                     format(result.median("dispatch")), ratio(result.ratio("default")), ratio(result.ratio("dispatch"))], widths)
            }
        }
        if !report.niceShare.isEmpty {
            section("Nice share: CPU share of each side vs the kernel's prediction (weight 1.25^-nice)")
            let traced = report.niceShare.contains { $0.sides.contains { $0.tracedNice != nil } }
            let widths = [44, 9, 15, 15, 8] + (traced ? [16] : [])
            row(["pair", "nice", "share", "predicted", "error"] + (traced ? ["nice (trace)"] : []), widths)
            for result in report.niceShare {
                let a = result.sides[0], b = result.sides[1]
                func niceList(_ side: ShareSide) -> String { side.tracedNice.map { $0.map(String.init).joined(separator: ",") } ?? "-" }
                row([result.label, "\(a.nice)/\(b.nice)", percent(a.share) + "/" + percent(b.share),
                     percent(a.predictedShare) + "/" + percent(b.predictedShare), percent(result.relativeError)]
                    + (traced ? [niceList(a) + "/" + niceList(b)] : []), widths)
            }
        }
    }

    /// The goals (`--goals`), one line each, under a heading that says what they are, then a
    /// count. Goals are design targets that a run meets or misses; a missed one is not an error.
    static func goalRows(_ goals: [GoalCheck], across: String? = nil) {
        section("Goals\(across.map { " " + $0 } ?? "") (targets, not failures: whether this run's figures meet each "
                + "design target; timings vary by machine and load)")
        guard !goals.isEmpty else {
            Swift.print("(no goal applies to the workloads that ran)")
            return
        }
        for goal in goals {
            Swift.print((goal.met ? "met   " : "missed") + "  " + goal.goal.padding(64) + goal.measured)
        }
        let missed = goals.filter { !$0.met }.count
        Swift.print("\(goals.count - missed) of \(goals.count) goals met" + (missed > 0 ? " (exit status 2)" : ""))
    }

    private static func throughputRows(_ results: [ThroughputResult]) {
        let names = Competitors.all.map(\.name)
        let others = names.filter { $0 != "dispatch" }
        let widths = [4, 12, 19] + names.map { max(11, $0.count + 1) } + others.map { _ in 10 }
        row(["id", "workload", "size"] + names + others.map { "\($0.prefix(4))xdisp" }, widths)
        for result in results {
            row([result.id, result.name, result.size] + names.map { format(result.median($0)) }
                + others.map { ratio(result.speedup($0)) }, widths)
        }
    }

    /// S1: work / (wall × CPUs) per contender, one row per task size.
    private static func efficiencyRows(_ results: [ThroughputResult], cpus: Int) {
        let speedups = results.filter { $0.workNsPerItem != nil }
        guard !speedups.isEmpty else { return }
        let names = Competitors.all.map(\.name)
        section("S1 efficiency on \(cpus) CPUs: work / (wall x CPUs), from the median ns per op")
        let widths = [10] + names.map { _ in 11 }
        row(["work"] + names, widths)
        for result in speedups {
            let work = result.workNsPerItem ?? 0
            row([ChartStyle.duration(work)] + names.map { name in
                let value = S1Speedup.efficiency(workNsPerItem: work, nsPerItem: result.median(name), cpus: cpus)
                return value.isFinite ? fixed(value, 2) : "-"
            }, widths)
        }
    }

    private static func latencyRows(_ results: [LatencyResult], nice: Bool, scenarioWidth: Int = 12, contenderWidth: Int = 15) {
        let widths = [scenarioWidth, contenderWidth, 9, 9, 9, 10, 8] + (nice ? [16, 12] : [])
        row(["scenario", "contender", "p50", "p99", "p99.9", "max", "count"] + (nice ? ["probe nice", "load nice"] : []), widths)
        for result in results {
            let m = result.merged
            row([result.scenario, result.contender, micro(m.p50), micro(m.p99), micro(m.p999), micro(m.max), "\(m.count)"]
                + (nice ? [niceText(result.probeNice), niceText(result.loadNice)] : []), widths)
        }
    }

    /// "-4" or "10 (95%), 0 (5%)": the nice values bodies ran at.
    static func niceText(_ counts: [String: Int]?) -> String {
        guard let counts, !counts.isEmpty else { return "-" }
        let total = counts.values.reduce(0, +)
        let sorted = counts.sorted { $0.value > $1.value }
        if sorted.count == 1 { return sorted[0].key }
        return sorted.prefix(3).map { "\($0.key) (\(Int((Double($0.value) / Double(total) * 100).rounded()))%)" }
            .joined(separator: ", ")
    }

    static func section(_ title: String) {
        Swift.print("")
        Swift.print(title)
    }

    /// One row: each cell padded to its width.
    static func row(_ cells: [String], _ widths: [Int]) {
        Swift.print(zip(cells, widths).map { $0.padding($1) }.joined().trimmingTrailingSpaces)
    }

    /// A value with three significant digits at most ("612", "95.1", "3.51"), "-" when absent.
    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "-" }
        let magnitude = abs(value)
        let decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2
        return fixed(value, decimals)
    }

    /// "2.52x" ("0.014x" below 0.1), "-" when absent.
    static func ratio(_ value: Double) -> String { value.isFinite ? fixed(value, value < 0.1 ? 3 : 2) + "x" : "-" }

    /// ns as µs with three significant digits at most.
    static func micro(_ ns: UInt64) -> String { format(Double(ns) / 1000) }

    /// A fraction as a percentage with one decimal.
    static func percent(_ value: Double) -> String { value.isFinite ? fixed(value * 100, 1) + "%" : "-" }

    /// `value` with `decimals` decimals; "-" when it is not a number (a contender left out).
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        guard decimals > 0 else { return "\(scaled)" }
        let sign = scaled < 0 ? "-" : ""
        let whole = abs(scaled) / Int(scale), fraction = abs(scaled) % Int(scale)
        let digits = String(fraction)
        return "\(sign)\(whole)." + String(repeating: "0", count: decimals - digits.count) + digits
    }
}

extension String {
    /// Without the spaces at its end.
    var trimmingTrailingSpaces: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
