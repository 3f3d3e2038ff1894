// NiceShare.swift — the thread-priority experiment (`--nice-share`): two classes of saturating
// operations share every CPU; each side's CPU share next to what the kernel's weights predict
// for the nice values the bodies actually ran at (x1.25 per nice step).
import DispatchBaselines
import Glibc
import Operations
import OperationsCore

/// The nice-share experiment, on our Swift API.
enum NiceShare {
    static let id = "nice-share"
    static let help = """
        (--nice-share) two sides of saturating operations, one per CPU each, on two queues of
        different QoS share the CPUs for --share-seconds: every pair of QoS classes, and
        threadPriority 0.0 vs 1.0 (default and utility queues, utility's nice set to default's
        for that pair). Each side's CPU time share next to the share the kernel's weights
        predict for the nice values the bodies ran at (weight 1.25^-nice), and the error of the
        smaller side. With --same-cpu, both queues are placed on one CPU (the last usable) and
        each side runs one operation there: two queues of different QoS split that CPU.
        """

    /// One side: the queue's QoS and the operations' threadPriority.
    struct Side {
        var qos: PerfQoS
        var threadPriority: Double
        var label: String { threadPriority == 0.5 ? "\(qos)" : "\(qos) tp \(threadPriority)" }
    }

    /// Every pair of classes (threadPriority 0.5), then the threadPriority pair.
    static var pairs: [(Side, Side)] {
        let classes = PerfQoS.allCases
        var pairs: [(Side, Side)] = []
        for (i, a) in classes.enumerated() {
            for b in classes[(i + 1)...] { pairs.append((Side(qos: a, threadPriority: 0.5), Side(qos: b, threadPriority: 0.5))) }
        }
        pairs.append((Side(qos: .default, threadPriority: 0.0), Side(qos: .utility, threadPriority: 1.0)))
        return pairs
    }

    static func run(seconds: Double, cpus: Int, sameCPU: Bool = false) throws -> [NiceShareResult] {
        let placedOn = sameCPU ? OperationsRuntime.usableCPUs.last : nil
        return try pairs.enumerated().map { index, pair in
            let label = "\(pair.0.label) vs \(pair.1.label)" + (placedOn.map { " (CPU \($0))" } ?? "")
            Progress.show("\(id): \(label)")
            return try Watchdog.guarding("\(id) \(label)") {
                // The threadPriority pair compares two classes of equal nice.
                let saved = OperationsRuntime.niceTable
                if pair.0.threadPriority != 0.5 {
                    var table = saved
                    table[pair.1.qos.rawValue] = table[pair.0.qos.rawValue]
                    _ = table.withUnsafeBufferPointer { op_runtime_set_nice_table($0.baseAddress) }
                }
                defer { _ = saved.withUnsafeBufferPointer { op_runtime_set_nice_table($0.baseAddress) } }
                // With --trace, the pair's trace says which nice value each body ran at.
                var (result, tracePath) = try TraceCapture.around("\(id)-\(index + 1)") {
                    share([pair.0, pair.1], seconds: seconds, cpus: placedOn == nil ? cpus : 1, label: label,
                          placedOn: placedOn)
                }
                if let tracePath, let trace = TraceFile(path: tracePath) {
                    for side in result.sides.indices {
                        result.sides[side].tracedNice = trace.niceValues(ofQueue: "nice-share \(result.sides[side].label)").sorted()
                    }
                }
                return result
            }
        }
    }

    /// Runs `cpus` saturating operations per side, opens the window once all started, and
    /// compares the CPU time each side got with the kernel's prediction.
    static func share(_ sides: [Side], seconds: Double, cpus: Int, label: String, placedOn: Int? = nil) -> NiceShareResult {
        let tallies = UnsafeMutablePointer<share_side>.allocate(capacity: sides.count)
        tallies.initialize(repeating: share_side(), count: sides.count)
        defer { tallies.deallocate() }
        let queues = sides.enumerated().map { index, side in
            let queue = Operations.OperationQueue()
            queue.name = "nice-share \(side.label)"
            queue.qualityOfService = side.qos.value()
            if let placedOn {
                do { try queue.setCPUs([placedOn]) } catch { fatalError("nice-share --same-cpu: \(error)") }
            }
            let tally = TallyRef(pointer: tallies + index)
            for _ in 0..<cpus {
                let op = Operations.BlockOperation { perf_saturate_body(tally.pointer) }
                op.threadPriority = side.threadPriority
                queue.addOperation(op)
            }
            return queue
        }
        while (0..<sides.count).contains(where: { share_started(tallies + $0) < cpus }) { usleep(1000) }
        perf_set_go(true)
        usleep(UInt32(seconds * 1e6))
        perf_set_stop(true)
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        perf_set_stop(false)
        perf_set_go(false)

        let cpu = (0..<sides.count).map { Double(tallies[$0].cpu_ns) / 1e9 }
        let weights = (0..<sides.count).map { pow(1.25, -Double(tallies[$0].nice)) }
        let measured = ShareSide.shares(cpu)
        let predicted = ShareSide.shares(weights)
        let result = sides.indices.map { index in
            ShareSide(label: sides[index].label, nice: tallies[index].nice, cpuSeconds: cpu[index],
                      share: measured[index], predictedShare: predicted[index])
        }
        let smaller = predicted[0] <= predicted[1] ? 0 : 1
        return NiceShareResult(label: label, sides: result,
                               relativeError: abs(measured[smaller] - predicted[smaller]) / predicted[smaller])
    }
}

/// A share_side tally, sendable into the operations (the experiment owns the storage).
private struct TallyRef: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<share_side>
}

extension ShareSide {
    /// Each value's fraction of their sum.
    static func shares(_ values: [Double]) -> [Double] {
        let total = values.reduce(0, +)
        return values.map { total > 0 ? $0 / total : .nan }
    }
}
