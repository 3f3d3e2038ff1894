// S1Speedup.swift — S1: how much of the machine a runtime turns into useful work. N tasks of a
// fixed amount of CPU work (2, 20 and 200 µs) from one submitter onto a default-width queue;
// efficiency = work / (wall × CPUs), 1.0 being every CPU busy with task bodies all the time.
import DispatchBaselines

/// S1 speedup.
enum S1Speedup {
    static let id = "S1"
    static let help = """
        speedup: N tasks of 2, 20 and 200 µs of CPU work each (a calibrated integer loop, the
        same C body everywhere) added one by one from one thread to a default-width queue, then
        a wait; efficiency = N × work / (wall × CPUs). N gives each CPU --spin-work-ms of work
        (default 50) and at least 8 tasks.
        """

    /// The work per task, in µs.
    static let taskMicroseconds = [2.0, 20.0, 200.0]

    /// Loop steps per µs, calibrated once per process on the first thread that asks.
    static let stepsPerMicrosecond = perf_calibrate_spin()

    static func workloads(cpus: Int, workMsPerCPU: Double) -> [ThroughputWorkload] {
        taskMicroseconds.map { micros in
            let n = max(8 * cpus, Int((workMsPerCPU * 1000 * Double(cpus) / micros).rounded()))
            let iterations = UInt64((micros * stepsPerMicrosecond).rounded())
            return ThroughputWorkload(
                id: id, name: "speedup", size: "\(Int(micros)) µs, n=\(n)", items: n,
                workNsPerItem: micros * 1000
            ) { competitor, counter in
                let work = UnsafeMutablePointer<spin_work>.allocate(capacity: 1)
                work.initialize(to: spin_work(counter: counter.pointer, iterations: iterations))
                defer { work.deallocate() }
                return try competitor.runEach(n, body: perf_spin_body, context: UnsafeMutableRawPointer(work))
            }
        }
    }

    /// work / (wall × CPUs) from a median ns per item.
    static func efficiency(workNsPerItem: Double, nsPerItem: Double, cpus: Int) -> Double {
        workNsPerItem / (nsPerItem * Double(cpus))
    }
}
