// LatencyHistogram.swift — latencies in an HdrHistogram (hdrhistogram-swift), and the summary
// the table, JSON and charts show: count, p50, p99, p99.9, max, and the percentile curve.
import Histogram

/// Latencies in ns, three significant digits, up to 100 s.
struct LatencyHistogram {
    private(set) var histogram = Histogram<UInt64>(highestTrackableValue: 100_000_000_000, numberOfSignificantValueDigits: .three)
    /// The exact largest value (the histogram keeps it only to three digits).
    private(set) var exactMax: UInt64 = 0

    mutating func record(_ ns: UInt64) {
        histogram.record(min(ns, histogram.highestTrackableValue))
        exactMax = max(exactMax, ns)
    }

    mutating func add(_ other: LatencyHistogram) {
        histogram.add(other.histogram)
        exactMax = max(exactMax, other.exactMax)
    }

    /// The percentiles shown on the charts' x axis.
    static let curvePercentiles: [Double] = [0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100]

    var summary: LatencySummary {
        LatencySummary(
            count: Int(histogram.totalCount),
            p50: histogram.valueAtPercentile(50), p99: histogram.valueAtPercentile(99),
            p999: histogram.valueAtPercentile(99.9), max: exactMax,
            curve: Self.curvePercentiles.map { CurvePoint(percentile: $0, ns: histogram.valueAtPercentile($0)) })
    }
}

/// What one histogram says, in ns.
struct LatencySummary: Codable, Sendable {
    var count: Int
    var p50: UInt64
    var p99: UInt64
    var p999: UInt64
    var max: UInt64
    /// Latency at each of `LatencyHistogram.curvePercentiles`.
    var curve: [CurvePoint]
}

/// One point of a percentile curve.
struct CurvePoint: Codable, Sendable {
    var percentile: Double
    var ns: UInt64
}
