// Runner.swift — interleaved rounds (A B, B A, …) with verification and a watchdog; results
// are medians over rounds and ratios taken within each round.
import Glibc
import Synchronization

struct WorkloadResult {
    var workload: String
    var size: Int
    /// ns per item, per contender, one entry per round.
    var nsPerItem: [String: [Double]]
    /// dispatch time / our time, one entry per round.
    var ratios: [Double]
    /// Foundation time / our time, one entry per round (Swift-layer workloads).
    var foundationRatios: [Double] = []
}

enum Runner {
    /// Runs each contender once on a small size and checks it executed every item.
    static func verify(_ workload: Workload) throws {
        for contender in workload.contenders {
            let counter = UnsafeMutablePointer<Int64>.allocate(capacity: 1)
            defer { counter.deallocate() }
            counter.pointee = 0
            _ = try contender.run(1000, counter)
            let got = counter.pointee
            if got != 1000 {
                throw PerfError.wrongCount(workload: workload.name, implementation: contender.name,
                                           expected: 1000, got: got)
            }
        }
    }

    /// `repetitions` runs of the size-`size` workload make one timed sample (for small sizes,
    /// so that one cold wake-up of parked threads does not stand for the cost per task).
    static func measure(_ workload: Workload, size: Int, rounds: Int, repetitions: Int = 1) throws -> WorkloadResult {
        var ns: [String: [Double]] = [:]
        var ratios: [Double] = []
        var foundationRatios: [Double] = []
        let count = workload.contenders.count
        for round in 0..<rounds {
            var times: [String: Double] = [:]
            for k in 0..<count {
                let contender = workload.contenders[(round + k) % count]
                let counter = UnsafeMutablePointer<Int64>.allocate(capacity: 1)
                defer { counter.deallocate() }
                counter.pointee = 0
                let elapsed = try Watchdog.guarding("\(workload.name)/\(contender.name) n=\(size)") {
                    var total: UInt64 = 0
                    for _ in 0..<repetitions { total += try contender.run(size, counter) }
                    return total
                }
                let expected = size * repetitions
                if counter.pointee != Int64(expected) {
                    throw PerfError.wrongCount(workload: workload.name, implementation: contender.name,
                                               expected: expected, got: counter.pointee)
                }
                times[contender.name] = Double(elapsed)
                ns[contender.name, default: []].append(Double(elapsed) / Double(expected))
            }
            // The ratio is dispatch time over ours (the C core's, or the Swift layer's).
            if let ours = times["core"] ?? times["operations"], let dispatch = times["dispatch"] {
                ratios.append(dispatch / ours)
            }
            if let ours = times["operations"], let foundation = times["foundation"] {
                foundationRatios.append(foundation / ours)
            }
            Progress.line("\(workload.name) n=\(size) round \(round + 1)/\(rounds)")
        }
        return WorkloadResult(workload: workload.name, size: size, nsPerItem: ns, ratios: ratios,
                              foundationRatios: foundationRatios)
    }
}

/// Turns a hang into a loud failure naming the workload: a timer thread ends the process
/// with exit status 3 if the body has not returned within `limitSeconds`.
enum Watchdog {
    nonisolated(unsafe) static var limitSeconds = 120

    static func guarding<T>(_ label: String, _ body: () throws -> T) throws -> T {
        let box = WatchdogBox(
            message: "operations-perf: watchdog: \(label) did not finish within \(limitSeconds) s\n",
            tenths: limitSeconds * 10)
        var thread = pthread_t()
        pthread_create(&thread, nil, { raw in
            let box = Unmanaged<WatchdogBox>.fromOpaque(raw!).takeRetainedValue()
            for _ in 0..<box.tenths {
                usleep(100_000)
                if !box.armed.load(ordering: .acquiring) { return nil }
            }
            writeStandardError(box.message)
            exit(3)
        }, Unmanaged.passRetained(box).toOpaque())
        defer {
            box.armed.store(false, ordering: .releasing)
            pthread_join(thread, nil)
        }
        return try body()
    }
}

final class WatchdogBox: Sendable {
    let armed = Atomic<Bool>(true)
    let message: String
    let tenths: Int
    init(message: String, tenths: Int) {
        self.message = message
        self.tenths = tenths
    }
}

enum Progress {
    /// A progress line on stderr, overwritten in place.
    static func line(_ text: String) {
        writeStandardError("\r\u{1B}[K\(text)")
    }
    static func done() { writeStandardError("\r\u{1B}[K") }
}

/// Writes to file descriptor 2 (Glibc's `stderr` global is not concurrency-safe in Swift 6).
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}
