// SweepChart.swift — sweep.svg: ns per op against the number of ops (both log scales), one
// panel per swept workload, one line per contender; flat lines are the goal.
import Foundation

/// The scaling sweep's lines.
enum SweepChart {
    static func svg(_ results: [ThroughputResult]) -> SVGDocument {
        let ids = results.map(\.id).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let contenders = Competitors.all.map(\.name)
        let panelWidth = 260.0, panelHeight = 220.0, top = 76.0, left = 70.0, gap = 40.0
        var doc = SVGDocument(width: left + Double(ids.count) * (panelWidth + gap), height: top + panelHeight + 60)
        doc.text(20, 24, "Scaling sweep: ns per op (log) against ops per run (log)", size: 13, bold: true)
        doc.legend(x: 20, y: 44, contenders.map { ($0, ChartStyle.color($0)) })
        let axis = LogAxis(covering: results.flatMap { result in contenders.map { result.median($0) } },
                           from: top + panelHeight, to: top)
        let sizes = ScalingSweep.sizes.map(Double.init)
        for (index, id) in ids.enumerated() {
            let x0 = left + Double(index) * (panelWidth + gap)
            func x(_ items: Int) -> Double {
                x0 + panelWidth * (log10(Double(items)) - log10(sizes[0])) / (log10(sizes.last!) - log10(sizes[0]))
            }
            let panel = results.filter { $0.id == id }
            doc.text(x0 + panelWidth / 2, top - 4, "\(id) \(panel.first?.name ?? "")", anchor: "middle", bold: true)
            for decade in axis.decades {
                doc.line(x0, axis.position(decade), x0 + panelWidth, axis.position(decade))
                if index == 0 { doc.text(x0 - 6, axis.position(decade) + 4, ChartStyle.duration(decade), size: 9, anchor: "end", fill: "#888") }
            }
            for size in ScalingSweep.sizes {
                doc.line(x(size), top, x(size), top + panelHeight, dashed: true)
                doc.text(x(size), top + panelHeight + 14, "10^\(Int(log10(Double(size))))", size: 9, anchor: "middle", fill: "#888")
            }
            for name in contenders {
                let points = panel.compactMap { result -> (Double, Double)? in
                    let value = result.median(name)
                    return value.isFinite ? (x(result.items), axis.position(value)) : nil
                }
                if !points.isEmpty { doc.polyline(points, stroke: ChartStyle.color(name)) }
            }
        }
        return doc
    }
}
