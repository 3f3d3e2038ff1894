// QueueWaitChart.swift — queue-wait.svg of `--trace DIR`: per workload (W9, W12) and QoS class,
// the queue wait's p50, p90 and p99 (the latency histograms' growth during the workload) on a
// logarithmic axis: under load, how long ready work of each class waited for a worker.

/// Queue waits per class, by percentile.
enum QueueWaitChart {
    static func svg(_ rows: [QueueWaitRow]) -> SVGDocument {
        let left = 260.0, width = 480.0, rowHeight = 24.0
        let values = rows.flatMap { [Double($0.p50), Double($0.p99)] }.map { max($0, 100) }
        let axis = LogAxis(covering: values, from: left, to: left + width)
        var doc = SVGDocument(width: left + width + 40, height: 80 + Double(rows.count) * rowHeight)
        doc.text(20, 24, "Queue wait (ready to start) per QoS class under load: p50, p90, p99", size: 13, bold: true)
        for (index, row) in rows.enumerated() {
            let y = 50 + Double(index) * rowHeight
            doc.text(left - 8, y + 12, "\(row.workload) \(row.qos) (\(row.count) ops)", size: 10, anchor: "end")
            let p50 = axis.position(max(Double(row.p50), 100)), p90 = axis.position(max(Double(row.p90), 100))
            let p99 = axis.position(max(Double(row.p99), 100))
            doc.line(p50, y + 8, p99, y + 8, stroke: "#1f77b4", width: 2)
            doc.rect(x: p50 - 3, y: y + 3, width: 6, height: 10, fill: "#1f77b4")
            doc.rect(x: p90 - 2, y: y + 3, width: 4, height: 10, fill: "#ff7f0e")
            doc.rect(x: p99 - 2, y: y + 3, width: 4, height: 10, fill: "#d62728")
        }
        let axisY = 50 + Double(rows.count) * rowHeight + 10
        for decade in axis.decades {
            doc.line(axis.position(decade), 44, axis.position(decade), axisY - 8)
            doc.text(axis.position(decade), axisY, ChartStyle.duration(decade), size: 9, anchor: "middle", fill: "#666")
        }
        doc.legend(x: left, y: 50 + Double(rows.count) * rowHeight + 34,
                   [(name: "p50", color: "#1f77b4"), (name: "p90", color: "#ff7f0e"), (name: "p99", color: "#d62728")])
        return doc
    }
}
