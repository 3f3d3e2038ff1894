// Statistics.swift — medians and the timing clock used by every workload.
import Glibc

enum Clock {
    /// CLOCK_MONOTONIC in nanoseconds.
    static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

extension Array where Element == Double {
    /// The median (mean of the middle two for an even count).
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
    case hang(String)
    case wrongCount(workload: String, implementation: String, expected: Int, got: Int64)

    var description: String {
        switch self {
        case .setup(let text): "setup failed: \(text)"
        case .hang(let text): "watchdog: \(text)"
        case .wrongCount(let workload, let implementation, let expected, let got):
            "\(workload)/\(implementation): expected \(expected) executions, counted \(got)"
        }
    }
}
