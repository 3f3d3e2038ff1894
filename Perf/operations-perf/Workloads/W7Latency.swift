// W7Latency.swift — W7: latency from the submit call to the operation's first instruction, with
// workers idle (parked), busy (the next op submitted as the previous starts), and under a
// paced stream (50 k ops/s).
import Glibc

/// W7 latency.
enum W7Latency {
    static let id = "W7"
    static let help = """
        latency: time from the submit call (addOperation, op_queue_submit_f, dispatch_async_f)
        to the body's first instruction, on a default-width queue at default QoS: idle (1 ms
        gaps, workers parked; --idle-samples per round), busy (next op submitted as the previous
        starts) and stream (paced at 50 k ops/s; both --latency-samples per round). p50, p99,
        p99.9 and max of all rounds in one HdrHistogram.
        """

    /// How probes arrive.
    enum Mode: String, CaseIterable {
        case idle, busy, stream
    }

    /// Gap between idle probes, and between stream probes (50 k ops/s).
    static let idleGapNs: UInt64 = 1_000_000
    static let streamIntervalNs: UInt64 = 20_000

    /// One result per mode and competitor.
    static func run(on competitors: [any Competitor], sizes: Sizes, rounds: Int) throws -> [LatencyResult] {
        try Mode.allCases.flatMap { mode in
            let count = mode == .idle ? sizes.idleSamples : sizes.latencySamples
            return try LatencyRunner.measure(workload: id, scenario: mode.rawValue, on: competitors, rounds: rounds) {
                try sample(mode, count: count, on: $0)
            }
        }
    }

    /// Submits `count` probes in `mode` and waits until every one ran.
    static func sample(_ mode: Mode, count: Int, on competitor: any Competitor) throws -> LatencySample {
        let target = try competitor.makeProbeTarget(.plain)
        let slots = ProbeSlots(count: count, recordNice: false)
        switch mode {
        case .idle:
            for i in 0..<count {
                usleep(UInt32(idleGapNs / 1000))
                target.submit(slots[i], .probe)
                slots.spinUntilStarted(i)
            }
        case .busy:
            for i in 0..<count {
                target.submit(slots[i], .probe)
                while !slots.started(i) {}
            }
        case .stream:
            let start = Clock.nanoseconds()
            for i in 0..<count {
                let due = start + UInt64(i) * streamIntervalNs
                while Clock.nanoseconds() < due {}
                target.submit(slots[i], .probe)
            }
        }
        slots.waitAllFinished()
        target.close()
        var sample = LatencySample()
        for latency in slots.latencies { sample.histogram.record(latency) }
        return sample
    }
}
