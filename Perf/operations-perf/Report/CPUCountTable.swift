// CPUCountTable.swift — the `--cpus` summary on stdout: each throughput figure per CPU count
// (ns/op, and dispatch's time / ours in the same round) and S1's efficiency per CPU count.

/// Prints a `CPUCountReport`.
enum CPUCountTable {
    static func print(_ report: CPUCountReport) {
        let counts = report.runs.map(\.cpus)
        guard let first = report.runs.first else { return }
        let keys = CPUCountRuns.keyedResults(first.report)
        let names = Competitors.all.map(\.name)
        let countColumns = counts.map { "\($0) cpu" }
        let widths = [4, 12, 16, 15] + counts.map { _ in 9 } + [2] + counts.map { _ in 9 }
        Swift.print("\nPer CPU count: ns per op (median of rounds) | xdispatch (dispatch's time / ours, same round; above 1 is faster)")
        row(["id", "workload", "size", "contender"] + countColumns + ["|"] + countColumns, widths)
        for (key, result) in keys {
            let perCount = report.runs.map { run in
                CPUCountRuns.keyedResults(run.report).first { $0.key == key }?.result
            }
            let size = String(result.size.split(separator: ",").first ?? "")
            for name in names where perCount.contains(where: { $0?.contenders.contains(name) == true }) {
                row([result.id, result.name, size, name]
                    + perCount.map { Table.format($0?.median(name) ?? .nan) } + ["|"]
                    + perCount.map { name == "dispatch" ? "" : Table.ratio($0?.speedup(name) ?? .nan) }, widths)
            }
        }
        let speedups = keys.filter { $0.result.workNsPerItem != nil }
        if !speedups.isEmpty {
            Swift.print("\nS1 efficiency per CPU count: work / (wall x CPUs)")
            row(["work", "contender"] + countColumns, [10, 12] + counts.map { _ in 9 })
            for (key, result) in speedups {
                for name in names {
                    let cells = report.runs.map { run -> String in
                        guard let result = CPUCountRuns.keyedResults(run.report).first(where: { $0.key == key })?.result,
                              let work = result.workNsPerItem else { return "-" }
                        let value = S1Speedup.efficiency(workNsPerItem: work, nsPerItem: result.median(name), cpus: run.cpus)
                        return value.isFinite ? Table.fixed(value, 2) : "-"
                    }
                    row([ChartStyle.duration(result.workNsPerItem ?? 0), name] + cells, [10, 12] + counts.map { _ in 9 })
                }
            }
        }
    }

    private static func row(_ cells: [String], _ widths: [Int]) { Table.row(cells, widths) }
}
