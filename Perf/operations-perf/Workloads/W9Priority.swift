// W9Priority.swift — W9: userInteractive probes every 2 ms while background ops of 1 ms CPU
// saturate every core: probe latency with load and probes on two queues, on one queue, and
// without load; and the nice values the probes and the load actually ran at.
import DispatchBaselines
import Operations

/// W9 priority under load.
enum W9Priority {
    static let id = "W9"
    static let help = """
        priority under load: background ops of 1 ms CPU, enough to keep every core busy for
        --priority-seconds (x1.2), are added first; then a userInteractive probe every 2 ms for
        --priority-seconds. Probe latency p50/p99 with (a) load and probes on two queues
        (background / userInteractive), (b) both on one default-width queue, each op carrying
        its QoS and the probes queuePriority veryHigh, (b') as (b) with the probes also at
        threadPriority 1.0 (a thread priority and a QoS are one request: the probe must not
        wait for a slot behind the load), (b'') as (b) on a queue of explicit width = CPUs
        (maxConcurrentOperationCount: every slot runs load, so a probe waits for the first one
        that frees; not dispatch, whose queues have no such width; needs 2 CPUs), (c) no load, (d) placed: as (a) with the
        probe queue placed on the last CPU and the load queue on the others (ours only; needs 2
        CPUs; the load then fills the other CPUs). The load stops once every probe started.
        Reports the nice values probes and load ran at (getpriority in the body). dispatch:
        global background / userInteractive queues; one new concurrent queue for (b).
        """

    /// The three cases.
    enum Case: String, CaseIterable {
        case twoQueues = "two queues"
        case oneQueue = "one queue"
        case oneQueueThreadPriority = "one queue, thread priority"
        case oneQueueOfWidth = "one queue, width CPUs"
        case noLoad = "no load"
        case placed
    }

    /// The competitors that run `scenario` on a machine of `cpus` CPUs.
    static func competitors(_ all: [any Competitor], for scenario: Case, cpus: Int) -> [any Competitor] {
        switch scenario {
        case .placed: return cpus >= 2 ? all.filter(\.canPlace) : []
        // One CPU would make it a serial queue, which raises the load ahead of a probe instead.
        case .oneQueueOfWidth: return cpus >= 2 ? all.filter(\.canLimitWidth) : []
        default: return all
        }
    }

    /// The probe queue's CPU and the load queue's for the placed case.
    static var placement: (probe: Int, load: [Int]) {
        let usable = OperationsRuntime.usableCPUs
        return (usable.last!, Array(usable.dropLast()))
    }

    static let probeIntervalNs: UInt64 = 2_000_000
    static let loadCpuNs: UInt64 = 1_000_000

    static func run(on competitors: [any Competitor], seconds: Double, cpus: Int, rounds: Int) throws -> [LatencyResult] {
        try Case.allCases.flatMap { scenario in
            let runners = Self.competitors(competitors, for: scenario, cpus: cpus)
            if runners.isEmpty { return [LatencyResult]() }
            return try LatencyRunner.measure(workload: id, scenario: scenario.rawValue, on: runners, rounds: rounds) {
                try sample(scenario, seconds: seconds, cpus: cpus, on: $0)
            }
        }
    }

    /// One case on one competitor; returns when every probe and load body finished.
    static func sample(_ scenario: Case, seconds: Double, cpus: Int, on competitor: any Competitor) throws -> LatencySample {
        perf_set_load_cpu_ns(loadCpuNs)
        let layout: ProbeLayout = switch scenario {
        case .oneQueue: .oneQueue(probeThreadPriority: nil)
        case .oneQueueThreadPriority: .oneQueue(probeThreadPriority: 1.0)
        case .oneQueueOfWidth: .oneQueueOfWidth(cpus)
        case .placed: .placed(probeCPU: placement.probe, loadCPUs: placement.load)
        case .twoQueues, .noLoad: .twoQueues
        }
        let target = try competitor.makeProbeTarget(layout)
        let loadCPUs = scenario == .placed ? cpus - 1 : cpus
        let loadCount = scenario == .noLoad ? 0 : Int(Double(loadCPUs) * seconds * 1e9 / Double(loadCpuNs) * 1.2)
        let probeCount = max(1, Int(seconds * 1e9 / Double(probeIntervalNs)))
        let load = ProbeSlots(count: loadCount, recordNice: true)
        let probes = ProbeSlots(count: probeCount, recordNice: true)
        for i in 0..<loadCount { target.submit(load[i], .load) }
        let start = Clock.nanoseconds()
        for i in 0..<probeCount {
            sleepUntil(start + UInt64(i) * probeIntervalNs)
            target.submit(probes[i], .probe)
        }
        probes.waitAllFinished()
        perf_set_stop(true)
        load.waitAllFinished()
        perf_set_stop(false)
        target.close()
        var sample = LatencySample(probeNice: probes.niceCounts, loadNice: loadCount > 0 ? load.niceCounts : nil)
        for latency in probes.latencies { sample.histogram.record(latency) }
        return sample
    }
}
