// TimelineChart.swift — <workload>.svg of `--trace DIR`: the last few milliseconds of a trace
// as Perfetto shows it, without Perfetto: a row per worker thread (named by class and CPU), a
// bar per body coloured by its QoS class, and a line per dependency from its dependency's end to
// its dependent's start.

/// A picture of a trace's tail.
enum TimelineChart {
    static let colors = ["background": "#9e9e9e", "utility": "#2ca02c", "default": "#1f77b4",
                         "userInitiated": "#ff7f0e", "userInteractive": "#d62728"]

    static func svg(_ trace: TraceFile, title: String, windowMicroseconds: Double = 2_000) -> SVGDocument {
        let end = trace.slices.map(\.end).max() ?? 0
        // The window, narrowed to the last 400 bodies where they are many (empty bodies).
        let latest = trace.slices.map(\.begin).sorted().suffix(400).first ?? end
        let window = min(windowMicroseconds, max(end - latest, 1))
        let start = end - window
        let shown = trace.slices.filter { $0.end >= start }
        let threads = Array(Set(shown.map(\.tid))).sorted {
            (trace.threadNames[$0] ?? "", $0) < (trace.threadNames[$1] ?? "", $1)
        }
        let left = 130.0, width = 760.0, rowHeight = 20.0, top = 50.0
        var doc = SVGDocument(width: left + width + 20, height: top + Double(max(threads.count, 1)) * rowHeight + 50)
        doc.text(20, 22, title, size: 13, bold: true)
        func x(_ ts: Double) -> Double { left + width * max(0, ts - start) / window }
        let row = Dictionary(uniqueKeysWithValues: threads.enumerated().map { ($1, $0) })
        for (index, tid) in threads.enumerated() {
            let y = top + Double(index) * rowHeight
            doc.text(left - 6, y + 13, trace.threadNames[tid] ?? "tid \(tid)", size: 10, anchor: "end")
            doc.line(left, y + rowHeight - 1, left + width, y + rowHeight - 1, stroke: "#eee")
        }
        for slice in shown {
            guard let index = row[slice.tid] else { continue }
            let x0 = x(slice.begin), x1 = max(x(slice.end), x0 + 0.8)
            doc.rect(x: x0, y: top + Double(index) * rowHeight + 3, width: x1 - x0, height: rowHeight - 7,
                     fill: colors[slice.qos] ?? "#555")
        }
        for flow in trace.flows where flow.to.1 >= start && flow.from.1 >= start {
            guard let from = row[flow.from.0], let to = row[flow.to.0] else { continue }
            doc.line(x(flow.from.1), top + Double(from) * rowHeight + rowHeight / 2,
                     x(flow.to.1), top + Double(to) * rowHeight + rowHeight / 2, stroke: "#444", width: 0.6)
        }
        let axisY = top + Double(threads.count) * rowHeight + 14
        for step in 0...4 {
            let ts = start + window * Double(step) / 4
            doc.text(x(ts), axisY, "\(Table.fixed((ts - start) / 1000, 2)) ms", size: 9, anchor: "middle", fill: "#666")
        }
        doc.legend(x: left, y: axisY + 20, colors.sorted { $0.key < $1.key }.map { (name: $0.key, color: $0.value) })
        return doc
    }
}
