// Statistics.swift — the timing clock, medians, and the harness's failure type.
import DispatchBaselines

/// The clock every figure is taken on.
enum Clock {
    /// CLOCK_MONOTONIC in nanoseconds.
    static func nanoseconds() -> UInt64 { perf_now_ns() }
}

extension Array where Element == Double {
    /// The median (mean of the middle two for an even count); NaN when empty.
    var median: Double {
        guard !isEmpty else { return .nan }
        let sorted = self.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}

/// A failure that ends the run loudly, naming the workload.
enum PerfError: Error, CustomStringConvertible {
    case setup(String)
    case wrongCount(workload: String, implementation: String, expected: Int, got: Int64)

    var description: String {
        switch self {
        case .setup(let text): "setup failed: \(text)"
        case .wrongCount(let workload, let implementation, let expected, let got):
            "\(workload) on \(implementation): expected \(expected) executions, counted \(got)"
        }
    }
}
