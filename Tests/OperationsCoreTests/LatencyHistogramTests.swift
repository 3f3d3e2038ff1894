// LatencyHistogramTests.swift — the latency histograms (issue 35, item 3): a known workload's
// counts exactly and its durations plausibly (30 ms bodies run 30 ms; on a serial queue the
// fifth waits for the four before it), per queue and per class; the bucket layout. The switch
// is process-wide and these tests leave it on: switching it off could cut another test's
// recording short, and every later test then runs the recording path (under the sanitizers too).
import Glibc
import OperationsCore
import Testing

private let thirtyMillisecondBody: TaskBody = { _ in sleepNs(30_000_000) }

@Suite struct LatencyHistogramTests {
    private func histograms(_ queue: OpaquePointer) -> (wait: op_histogram_t, run: op_histogram_t) {
        var wait = op_histogram_t(), run = op_histogram_t()
        #expect(op_queue_latency_histograms(queue, &wait, &run) == 0)
        return (wait, run)
    }

    @Test func aSerialQueueOfThirtyMillisecondBodiesRecordsItsWaitsAndRunTimes() throws {
        op_runtime_set_latency_histograms(true)
        #expect(op_runtime_latency_histograms())
        let queue = try makeQueue("histograms", qos: OP_QOS_UTILITY, width: 1)
        defer { op_queue_release(queue) }
        var classBefore = op_histogram_t(), unused = op_histogram_t()
        #expect(op_runtime_class_latency_histograms(OP_QOS_UTILITY, &unused, &classBefore) == 0)
        let unmeasuredBefore = op_runtime_unmeasured_waits()
        for _ in 0..<5 { #expect(op_queue_submit_f(queue, thirtyMillisecondBody, nil) == 0) }
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        var (wait, run) = histograms(queue)
        // Every run is timed; a wait goes unmeasured only when another test's ready task took its
        // slot in the table of ready times (counted, process-wide).
        #expect(run.count == 5, "run \(run.count) of 5 tasks")
        #expect(wait.count <= 5 && wait.count + (op_runtime_unmeasured_waits() - unmeasuredBefore) >= 5,
                "wait \(wait.count) of 5 tasks")
        let p50 = op_histogram_percentile(&run, 50)
        #expect(p50 >= 30_000_000 && p50 < 200_000_000, "a 30 ms body's run time p50: \(p50) ns")
        #expect(run.max_ns >= 30_000_000 && run.sum_ns >= 150_000_000)
        // Serial: the last waits for the four before it (120 ms at least), the fourth 90 ms.
        #expect(wait.max_ns >= 85_000_000, "the longest wait \(wait.max_ns) ns")
        let waitP100 = op_histogram_percentile(&wait, 100)
        #expect(waitP100 == wait.max_ns)
        var classAfter = op_histogram_t()
        #expect(op_runtime_class_latency_histograms(OP_QOS_UTILITY, &unused, &classAfter) == 0)
        #expect(classAfter.count >= classBefore.count + 5)
        #expect(op_queue_latency_histograms(nil, nil, nil) == EINVAL)
        #expect(op_runtime_class_latency_histograms(op_qos_t(rawValue: 9), nil, nil) == EINVAL)
    }

    /// A task that waits for a dependency is measured from its dependency's finish, not from
    /// its submit: well under the dependency's 300 ms (its finish hands it to the same worker).
    @Test func aDependentsWaitStartsWhenItsDependencyFinishes() throws {
        op_runtime_set_latency_histograms(true)
        let queue = try makeQueue("histograms-dependency", qos: OP_QOS_UTILITY)
        defer { op_queue_release(queue) }
        let first = try makeTask({ _ in sleepNs(300_000_000) }, nil)
        let second = try makeTask(emptyBody, nil)
        defer { op_task_release(first); op_task_release(second) }
        #expect(op_task_add_dependency(second, first) == 0)
        #expect(op_queue_submit(queue, second) == 0)
        #expect(op_queue_submit(queue, first) == 0)
        #expect(op_queue_wait(queue, Limits.waitNs) == 0)
        let (wait, _) = histograms(queue)
        #expect(wait.count <= 2)
        #expect(wait.max_ns < 250_000_000, "a wait measured from the submit, not from ready: \(wait.max_ns) ns")
    }

    @Test func bucketsAreExactBelowEightThenFourPerPowerOfTwo() {
        var low: UInt64 = 0, high: UInt64 = 0
        op_histogram_bucket_bounds(5, &low, &high)
        #expect(low == 5 && high == 5)
        op_histogram_bucket_bounds(8, &low, &high)
        #expect(low == 8 && high == 9)
        op_histogram_bucket_bounds(Int32(OP_HISTOGRAM_BUCKETS) - 1, &low, &high)
        #expect(high == UInt64.max)
        var previous: UInt64 = 0
        for index in 1..<Int32(OP_HISTOGRAM_BUCKETS) {
            op_histogram_bucket_bounds(index, &low, &high)
            #expect(low == previous + 1 && high >= low && (low < 8 || high - low + 1 <= low / 4 + 1),
                    "bucket \(index): \(low)…\(high) after \(previous)")
            previous = high
        }
    }
}
