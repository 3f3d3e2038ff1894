// LatencyChart.swift — latency distributions (W7, W9) as percentile curves: x is the percentile
// on a "nines" scale (50, 90, 99, 99.9, 99.99, max), y the latency on a log scale; one panel per
// scenario, one line per contender.
import Foundation

/// Percentile curves from HdrHistograms.
enum LatencyChart {
    static func svg(title: String, _ results: [LatencyResult]) -> SVGDocument {
        let scenarios = results.map(\.scenario).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let panelWidth = 300.0, panelHeight = 220.0, top = 76.0, left = 70.0, gap = 40.0
        var doc = SVGDocument(width: left + Double(scenarios.count) * (panelWidth + gap), height: top + panelHeight + 70)
        doc.text(20, 24, title, size: 13, bold: true)
        let contenders = results.map(\.contender).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        doc.legend(x: 20, y: 44, contenders.map { ($0, ChartStyle.color($0)) })
        let axis = LogAxis(covering: results.flatMap { $0.merged.curve.map { Double(max($0.ns, 1)) } },
                           from: top + panelHeight, to: top)
        for (index, scenario) in scenarios.enumerated() {
            let x0 = left + Double(index) * (panelWidth + gap)
            func x(_ percentile: Double) -> Double {
                x0 + panelWidth * min(nines(percentile), maxNines) / maxNines
            }
            doc.text(x0 + panelWidth / 2, top - 4, scenario, anchor: "middle", bold: true)
            for decade in axis.decades {
                doc.line(x0, axis.position(decade), x0 + panelWidth, axis.position(decade))
                if index == 0 { doc.text(x0 - 6, axis.position(decade) + 4, ChartStyle.duration(decade), size: 9, anchor: "end", fill: "#888") }
            }
            for (percentile, label) in [(0.0, "0"), (50, "50"), (90, "90"), (99, "99"), (99.9, "99.9"), (99.99, "99.99")] {
                doc.line(x(percentile), top, x(percentile), top + panelHeight, dashed: true)
                doc.text(x(percentile), top + panelHeight + 14, label, size: 9, anchor: "middle", fill: "#888")
            }
            doc.text(x0 + panelWidth, top + panelHeight + 14, "max", size: 9, anchor: "end", fill: "#888")
            doc.text(x0 + panelWidth / 2, top + panelHeight + 30, "percentile", size: 10, anchor: "middle", fill: "#666")
            for result in results where result.scenario == scenario {
                let points = result.merged.curve.map { (x($0.percentile), axis.position(Double(max($0.ns, 1)))) }
                doc.polyline(points, stroke: ChartStyle.color(result.contender))
            }
        }
        return doc
    }

    /// The x scale: -log10(1 - p), so 90 → 1, 99 → 2, 99.9 → 3; 100 (max) at `maxNines`.
    private static let maxNines = 5.0
    private static func nines(_ percentile: Double) -> Double {
        percentile >= 100 ? maxNines : -log10(1 - percentile / 100)
    }
}
