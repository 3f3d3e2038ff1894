// Charts.swift — `--svg DIR`: writes every chart the report has data for and names the files.
import Foundation

/// The charts of a report.
enum Charts {
    /// Writes throughput.svg, w7-latency.svg, w9-priority.svg, sweep.svg, nice-share.svg (those
    /// with data) into `directory`; returns their paths.
    static func write(_ report: SuiteReport, to directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var charts: [(String, SVGDocument)] = []
        if !report.throughput.isEmpty { charts.append(("throughput.svg", ThroughputChart.svg(report.throughput))) }
        if !report.latency.isEmpty {
            charts.append(("w7-latency.svg", LatencyChart.svg(
                title: "W7: submit to first instruction, by percentile (all rounds)", report.latency)))
        }
        if !report.priority.isEmpty {
            charts.append(("w9-priority.svg", LatencyChart.svg(
                title: "W9: userInteractive probe latency under background load, by percentile", report.priority)))
        }
        if !report.sweep.isEmpty { charts.append(("sweep.svg", SweepChart.svg(report.sweep))) }
        if !report.niceShare.isEmpty { charts.append(("nice-share.svg", NiceShareChart.svg(report.niceShare))) }
        return try charts.map { name, doc in
            let path = (directory as NSString).appendingPathComponent(name)
            try doc.write(to: path)
            return path
        }
    }
}
