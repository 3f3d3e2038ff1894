// ThroughputChart.swift — throughput.svg: W1–W6, W10 and W11 as horizontal bars of ns per op (log scale),
// one panel per workload, each bar labelled with its speed-up over dispatch.

/// The throughput bars.
enum ThroughputChart {
    static func svg(_ results: [ThroughputResult]) -> SVGDocument {
        let contenders = Competitors.all.map(\.name)
        let barHeight = 14.0, panelGap = 34.0, left = 190.0, right = 640.0
        let panelHeight = Double(contenders.count) * (barHeight + 4)
        var doc = SVGDocument(width: 820, height: 70 + Double(results.count) * (panelHeight + panelGap))
        doc.text(20, 24, "Throughput: ns per op (log scale, shorter is faster); label: dispatch's time / its time",
                 size: 13, bold: true)
        let values = results.flatMap { result in contenders.map { result.median($0) } }
        let axis = LogAxis(covering: values, from: left, to: right)
        var y = 56.0
        for result in results {
            doc.text(20, y + 10, "\(result.id) \(result.name)", bold: true)
            doc.text(20, y + 25, result.size, size: 10, fill: "#666")
            for decade in axis.decades {
                doc.line(axis.position(decade), y - 4, axis.position(decade), y + panelHeight)
                doc.text(axis.position(decade), y + panelHeight + 11, ChartStyle.duration(decade), size: 9, anchor: "middle", fill: "#888")
            }
            for (index, name) in contenders.enumerated() {
                let top = y + Double(index) * (barHeight + 4)
                let value = result.median(name)
                doc.text(left - 6, top + 11, name, size: 10, anchor: "end")
                guard value.isFinite else {
                    doc.text(left + 4, top + 11, "not run", size: 10, fill: "#888")
                    continue
                }
                doc.rect(x: left, y: top, width: axis.position(value) - left, height: barHeight, fill: ChartStyle.color(name))
                let ratio = result.speedup(name)
                let speedup = name == "dispatch" || !ratio.isFinite ? "" : ", \(Table.ratio(ratio)) dispatch"
                doc.text(axis.position(value) + 5, top + 11, "\(Table.format(value)) ns\(speedup)", size: 10)
            }
            y += panelHeight + panelGap
        }
        return doc
    }
}
