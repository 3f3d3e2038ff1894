// W12Inversion.swift — W12: priority inversion. A userInteractive item waits for, or depends on,
// a background item of CPU work while background load keeps every CPU busy: the waiter's
// completion time against the same with no load, for us with and without QoS promotion.
import DispatchBaselines
import Operations

/// W12 priority inversion.
enum W12Inversion {
    static let id = "W12"
    static let help = """
        priority inversion: a userInteractive item waits for (wait: a blocking wait in its
        body) or depends on (dependency: the runtime's dependency; dispatch: a group notify) a
        background item of 0.5 ms CPU on a background queue of its own, one pair every 5 ms
        for --priority-seconds, while background load of 1 ms items (as W9's) keeps every CPU
        busy; and the same with no load. Time from the background item's submit to the
        waiter's end, p50/p99; the nice values the waiters and the background items ran at.
        Ours runs twice: with QoS promotion and without (OperationsRuntime.qosPromotion off
        for that contender). A contender slower than the pace runs its pairs back to back; one
        whose pair waits for the whole load gets fewer pairs. The core does not run it (it
        follows no dependencies: bindings do; its waits raise as ours).
        """

    /// The cases: wait or dependency, with or without load.
    enum Case: String, CaseIterable {
        case wait
        case dependency
        case waitNoLoad = "wait, no load"
        case dependencyNoLoad = "dependency, no load"

        var depends: Bool { self == .dependency || self == .dependencyNoLoad }
        var loaded: Bool { self == .wait || self == .dependency }
        /// The same pattern without load (the goal's reference).
        var noLoad: Case { depends ? .dependencyNoLoad : .waitNoLoad }
    }

    /// One column: a competitor, with promotion switched on or off for ours.
    struct Contender {
        let name: String
        let competitor: any Competitor
        /// OperationsRuntime.qosPromotion during its samples; nil: left alone (not ours).
        let promotion: Bool?
    }

    static let targetCpuNs: UInt64 = 500_000
    static let pairIntervalNs: UInt64 = 5_000_000
    static let withoutPromotion = "operations, no promotion"

    /// W12's columns for `competitors`: ours twice, the core not at all.
    static func contenders(_ competitors: [any Competitor]) -> [Contender] {
        competitors.flatMap { competitor -> [Contender] in
            switch competitor.name {
            case "operations":
                [Contender(name: "operations", competitor: competitor, promotion: true),
                 Contender(name: withoutPromotion, competitor: competitor, promotion: false)]
            case "core": []
            default: [Contender(name: competitor.name, competitor: competitor, promotion: nil)]
            }
        }
    }

    static func run(on competitors: [any Competitor], seconds: Double, cpus: Int, rounds: Int) throws -> [LatencyResult] {
        let columns = contenders(competitors)
        if columns.isEmpty { return [] }
        return try Case.allCases.flatMap { scenario in
            try LatencyRunner.measure(workload: id, scenario: scenario.rawValue, on: columns, named: \.name, rounds: rounds) {
                try sample(scenario, seconds: seconds, cpus: cpus, on: $0)
            }
        }
    }

    /// One case on one contender: pairs one after another (each waited for) for `seconds`.
    static func sample(_ scenario: Case, seconds: Double, cpus: Int, on contender: Contender) throws -> LatencySample {
        guard let pairs = try contender.competitor.makeInversionPairs() else {
            throw PerfError.setup("\(contender.name) has no W12 pairs")
        }
        let saved = OperationsRuntime.qosPromotion
        if let promotion = contender.promotion { OperationsRuntime.qosPromotion = promotion }
        defer { OperationsRuntime.qosPromotion = saved }
        perf_set_load_cpu_ns(W9Priority.loadCpuNs)
        perf_set_inversion_cpu_ns(targetCpuNs)
        let loadTarget = try contender.competitor.makeProbeTarget(.twoQueues)
        let loadCount = scenario.loaded ? Int(Double(cpus) * seconds * 1e9 / Double(W9Priority.loadCpuNs) * 1.2) : 0
        let load = ProbeSlots(count: loadCount, recordNice: false)
        for i in 0..<loadCount { loadTarget.submit(load[i], .load) }
        let most = max(1, Int(seconds * 1e9 / Double(pairIntervalNs)))
        let targets = ProbeSlots(count: most, recordNice: true)
        let waiters = ProbeSlots(count: most, recordNice: true)
        let start = Clock.nanoseconds()
        var done = 0
        while done < most {
            // Paced; a contender behind the pace submits at once, and stops at the time limit.
            if done > 0 && Double(Clock.nanoseconds() - start) >= seconds * 1e9 { break }
            sleepUntil(start + UInt64(done) * pairIntervalNs)
            pairs.submit(depends: scenario.depends, target: targets[done], waiter: waiters[done])
            waiters.waitFinished(done)
            done += 1
        }
        perf_set_stop(true)
        load.waitAllFinished()
        perf_set_stop(false)
        // Every waiter ran after its background item's work (the target stamps the end of its
        // work): a runtime whose wait or dependency did not hold would show fine latencies.
        if let early = (0..<done).first(where: { targets.startedNs($0) == 0 || targets.startedNs($0) > waiters.startedNs($0) }) {
            throw PerfError.setup("W12 \(scenario.rawValue) on \(contender.name): pair \(early)'s waiter ended before its background item's work")
        }
        pairs.close()
        loadTarget.close()
        var sample = LatencySample(probeNice: waiters.niceCounts(first: done), loadNice: targets.niceCounts(first: done))
        for latency in waiters.latencies.prefix(done) { sample.histogram.record(latency) }
        return sample
    }
}
