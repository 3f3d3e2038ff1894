// CPUCountChart.swift — cpus.svg (`--cpus`): ns per op (log) against the CPU count (log2), one
// panel per throughput figure, one line per contender; a flat line is perfect scaling of the
// submit and run path, a falling one (S1, S2, S3) work that spreads over the CPUs.
import Foundation

/// The per-CPU-count lines.
enum CPUCountChart {
    static func svg(_ runs: [CPUCountRun]) -> SVGDocument {
        let counts = runs.map(\.cpus)
        let keys = runs.first.map { CPUCountRuns.keyedResults($0.report) } ?? []
        let contenders = Competitors.all.map(\.name)
        let columns = 4, panelWidth = 230.0, panelHeight = 170.0, left = 70.0, top = 70.0, gapX = 50.0, gapY = 70.0
        let rows = max(1, (keys.count + columns - 1) / columns)
        var doc = SVGDocument(width: left + Double(columns) * (panelWidth + gapX),
                              height: top + Double(rows) * (panelHeight + gapY))
        doc.text(20, 24, "ns per op (log) against CPUs (log2): one child process per CPU count, medians of rounds",
                 size: 13, bold: true)
        doc.legend(x: 20, y: 44, contenders.map { ($0, ChartStyle.color($0)) })
        let low = Double(counts.min() ?? 1), high = Double(max(counts.max() ?? 2, (counts.min() ?? 1) * 2))
        for (index, entry) in keys.enumerated() {
            let x0 = left + Double(index % columns) * (panelWidth + gapX)
            let y0 = top + Double(index / columns) * (panelHeight + gapY)
            func x(_ cpus: Int) -> Double {
                x0 + panelWidth * (log2(Double(cpus)) - log2(low)) / max(log2(high) - log2(low), 1e-9)
            }
            let perCount = runs.map { run in
                (run.cpus, CPUCountRuns.keyedResults(run.report).first { $0.key == entry.key }?.result)
            }
            let axis = LogAxis(covering: perCount.flatMap { _, result in contenders.map { result?.median($0) ?? .nan } },
                               from: y0 + panelHeight, to: y0)
            let size = String(entry.result.size.split(separator: ",").first ?? "")
            doc.text(x0 + panelWidth / 2, y0 - 6, "\(entry.result.id) \(entry.result.name) \(size)", anchor: "middle", bold: true)
            for decade in axis.decades {
                doc.line(x0, axis.position(decade), x0 + panelWidth, axis.position(decade))
                doc.text(x0 - 6, axis.position(decade) + 4, ChartStyle.duration(decade), size: 9, anchor: "end", fill: "#888")
            }
            for cpus in counts {
                doc.line(x(cpus), y0, x(cpus), y0 + panelHeight, dashed: true)
                doc.text(x(cpus), y0 + panelHeight + 14, "\(cpus)", size: 9, anchor: "middle", fill: "#888")
            }
            for name in contenders {
                let points = perCount.compactMap { cpus, result -> (Double, Double)? in
                    guard let value = result?.median(name), value.isFinite else { return nil }
                    return (x(cpus), axis.position(value))
                }
                if !points.isEmpty { doc.polyline(points, stroke: ChartStyle.color(name)) }
            }
        }
        return doc
    }
}
