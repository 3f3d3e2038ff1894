// LatencyHistograms.swift — the latency histograms from Swift (issue 35): opt-in at run time,
// per queue and per QoS class, each operation's queue wait (from ready to its start) and run
// time, log-bucketed. Thin wrappers over the core's op_*_latency_histograms (queue/latency.c).
import OperationsCore

/// A histogram of durations in nanoseconds: values below 8 ns have a bucket each, then each
/// power of two is cut into four buckets, so a percentile read from it is within 25 %.
public struct LatencyHistogram: Sendable, Equatable {
    /// How many durations it holds.
    public var count: UInt64
    /// Their sum, in nanoseconds.
    public var totalNanoseconds: UInt64
    /// The longest, in nanoseconds.
    public var maxNanoseconds: UInt64
    /// The count in each bucket; ``bucketRange(_:)`` gives a bucket's values.
    public var buckets: [UInt64]

    init(_ raw: op_histogram_t) {
        count = raw.count
        totalNanoseconds = raw.sum_ns
        maxNanoseconds = raw.max_ns
        buckets = withUnsafeBytes(of: raw.buckets) { Array($0.bindMemory(to: UInt64.self)) }
    }

    /// The values bucket `index` counts, in nanoseconds.
    public static func bucketRange(_ index: Int) -> ClosedRange<UInt64> {
        var low: UInt64 = 0, high: UInt64 = 0
        op_histogram_bucket_bounds(Int32(index), &low, &high)
        return low...high
    }

    /// The duration at `percentile` (0 … 100), in nanoseconds: the upper bound of the bucket
    /// holding it, at most ``maxNanoseconds``; 0 when empty.
    public func percentile(_ percentile: Double) -> UInt64 {
        var raw = op_histogram_t()
        raw.count = count
        raw.sum_ns = totalNanoseconds
        raw.max_ns = maxNanoseconds
        withUnsafeMutableBytes(of: &raw.buckets) { bytes in
            let slots = bytes.bindMemory(to: UInt64.self)
            for (index, value) in buckets.enumerated() where index < slots.count { slots[index] = value }
        }
        return op_histogram_percentile(&raw, percentile)
    }

    /// The mean, in nanoseconds (0 when empty).
    public var meanNanoseconds: Double { count == 0 ? 0 : Double(totalNanoseconds) / Double(count) }
}

/// An operation's two latencies, each a histogram.
public struct LatencyHistograms: Sendable, Equatable {
    /// From when an operation became ready (added with no unfinished dependency, or its last
    /// dependency finished) to its start.
    public var queueWait: LatencyHistogram
    /// From its start to its body's return (for an asynchronous operation, its `start()`).
    public var runTime: LatencyHistogram
}

extension OperationsRuntime {
    /// Whether the latency histograms record (default off; `OPERATIONS_HISTOGRAMS=on` in the
    /// environment switches them on at start-up). Off, they cost one load and a branch per
    /// operation; on, a clock read at each ready, start and end and a few atomic adds.
    public static var latencyHistogramsEnabled: Bool {
        get { op_runtime_latency_histograms() }
        set { op_runtime_set_latency_histograms(newValue) }
    }

    /// The histograms of every operation that ran at `qualityOfService` (its queue's class, its
    /// own, or the class it was promoted to).
    public static func latencyHistograms(for qualityOfService: QualityOfService) -> LatencyHistograms {
        var wait = op_histogram_t(), run = op_histogram_t()
        _ = op_runtime_class_latency_histograms(qualityOfService.coreClass, &wait, &run)
        return LatencyHistograms(queueWait: LatencyHistogram(wait), runTime: LatencyHistogram(run))
    }

    /// Queue waits that could not be measured: the runtime keeps ready times in a table of
    /// 16 384 slots by address, and another operation ready at the same time took the slot
    /// (about N in 16 384 waits with N operations ready at once).
    public static var unmeasuredQueueWaits: UInt64 { op_runtime_unmeasured_waits() }
}

extension OperationQueue {
    /// This queue's latency histograms (empty until ``OperationsRuntime/latencyHistogramsEnabled``
    /// and an operation of it ran).
    public var latencyHistograms: LatencyHistograms {
        var wait = op_histogram_t(), run = op_histogram_t()
        _ = op_queue_latency_histograms(core, &wait, &run)
        return LatencyHistograms(queueWait: LatencyHistogram(wait), runTime: LatencyHistogram(run))
    }
}
