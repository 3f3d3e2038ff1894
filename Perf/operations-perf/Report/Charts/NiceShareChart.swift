// NiceShareChart.swift — nice-share.svg: for each pair, the first side's measured CPU share as
// a bar and the kernel's predicted share as a black tick.

/// Measured against predicted CPU shares.
enum NiceShareChart {
    static func svg(_ results: [NiceShareResult]) -> SVGDocument {
        let left = 290.0, width = 400.0, rowHeight = 22.0
        var doc = SVGDocument(width: left + width + 120, height: 70 + Double(results.count) * rowHeight + 20)
        doc.text(20, 24, "Nice share: first side's CPU share (bar) vs the kernel's prediction (tick)", size: 13, bold: true)
        for percent in stride(from: 0.0, through: 100, by: 25) {
            let x = left + width * percent / 100
            doc.line(x, 40, x, 50 + Double(results.count) * rowHeight)
            doc.text(x, 38, "\(Int(percent))%", size: 9, anchor: "middle", fill: "#888")
        }
        for (index, result) in results.enumerated() {
            let y = 50 + Double(index) * rowHeight
            let side = result.sides[0]
            doc.text(left - 6, y + 12, "\(result.label) (nice \(side.nice)/\(result.sides[1].nice))", size: 10, anchor: "end")
            if side.share.isFinite { doc.rect(x: left, y: y + 3, width: width * side.share, height: 12, fill: "#1f77b4") }
            let tick = left + width * side.predictedShare
            doc.line(tick, y, tick, y + 18, stroke: "black", width: 2)
            doc.text(left + width + 8, y + 12, "\(Table.percent(side.share)) vs \(Table.percent(side.predictedShare))", size: 10)
        }
        return doc
    }
}
