// TraceCapture.swift — `--trace DIR`: each workload runs under the runtime's trace (a flight
// recorder keeping about the latest 64 MB), written to DIR/<workload>.json for Perfetto, with
// DIR/<workload>.svg, a picture of its last milliseconds (TimelineChart); W9 and W12 also record
// the latency histograms, whose queue waits per QoS class make DIR/queue-wait.svg; nice-share
// reads from each pair's trace the nice value every body ran at. Timings of a traced run include
// the recording's cost (a clock read and a 64-byte write per event).
import Foundation
import Operations
import OperationsCore

/// The trace of the workloads of one run.
enum TraceCapture {
    /// The directory given with --trace; nil: nothing is traced.
    nonisolated(unsafe) static var directory: String?
    /// Queue waits per class over W9 and W12 (the latency histograms' growth while they ran).
    nonisolated(unsafe) static var queueWaits: [QueueWaitRow] = []
    static let flightRecorderBytes = 64 << 20

    /// Runs `body` under a trace written to DIR/`name`.json (and its picture), when --trace was
    /// given; returns the body's result and the trace's path.
    static func around<T>(_ name: String, _ body: () throws -> T) throws -> (T, String?) {
        guard let directory else { return (try body(), nil) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent("\(name).json")
        try OperationsRuntime.startTracing(to: path, flightRecorderBytes: flightRecorderBytes)
        let result: T
        do {
            result = try body()
        } catch {
            try? OperationsRuntime.stopTracing()
            throw error
        }
        try OperationsRuntime.stopTracing()
        if let trace = TraceFile(path: path) {
            let picture = (directory as NSString).appendingPathComponent("\(name).svg")
            try TimelineChart.svg(trace, title: "\(name): the last milliseconds of its trace").write(to: picture)
        }
        return (result, path)
    }

    /// Runs `body` (W9 or W12) with the latency histograms on and keeps the growth of each
    /// class's queue-wait histogram, when --trace was given.
    static func recordingQueueWaits<T>(_ workload: String, _ body: () throws -> T) rethrows -> T {
        guard directory != nil else { return try body() }
        let classes: [QualityOfService] = [.background, .utility, .default, .userInitiated, .userInteractive]
        let wasOn = OperationsRuntime.latencyHistogramsEnabled
        OperationsRuntime.latencyHistogramsEnabled = true
        let before = classes.map { OperationsRuntime.latencyHistograms(for: $0).queueWait }
        defer { OperationsRuntime.latencyHistogramsEnabled = wasOn }
        let result = try body()
        for (index, qos) in classes.enumerated() {
            let after = OperationsRuntime.latencyHistograms(for: qos).queueWait
            var grown = after
            grown.count = after.count - before[index].count
            grown.totalNanoseconds = after.totalNanoseconds - before[index].totalNanoseconds
            grown.buckets = zip(after.buckets, before[index].buckets).map { $0 - $1 }
            guard grown.count > 0 else { continue }
            queueWaits.append(QueueWaitRow(workload: workload, qos: "\(qos)", count: grown.count,
                                           p50: grown.percentile(50), p90: grown.percentile(90),
                                           p99: grown.percentile(99), max: grown.percentile(100)))
        }
        return result
    }

    /// Writes DIR/queue-wait.svg and prints the table, when there are rows.
    static func finish() throws {
        guard let directory, !queueWaits.isEmpty else { return }
        Table.section("Queue wait per QoS class under load (latency histograms, our runtime: Swift and C contenders)")
        Table.row(["workload", "class", "operations", "p50", "p90", "p99", "max"], [10, 16, 12, 10, 10, 10, 10])
        for row in queueWaits {
            Table.row([row.workload, row.qos, "\(row.count)", Table.micro(row.p50) + " µs",
                       Table.micro(row.p90) + " µs", Table.micro(row.p99) + " µs",
                       Table.micro(row.max) + " µs"], [10, 16, 12, 10, 10, 10, 10])
        }
        let path = (directory as NSString).appendingPathComponent("queue-wait.svg")
        try QueueWaitChart.svg(queueWaits).write(to: path)
        print("\nqueue-wait chart: \(path)")
    }
}

/// One class's queue waits during one workload.
struct QueueWaitRow: Codable {
    var workload: String
    var qos: String
    var count: UInt64
    var p50, p90, p99, max: UInt64
}

/// A trace file read back: the bodies' slices with their thread, and the dependency flows.
struct TraceFile {
    struct Slice {
        var name: String
        var tid: Int
        var begin: Double  // µs
        var end: Double
        var queue: String
        var qos: String
        var nice: Int
    }
    var slices: [Slice] = []
    var threadNames: [Int: String] = [:]
    /// Dependency flows: from (tid, ts) to (tid, ts).
    var flows: [(from: (Int, Double), to: (Int, Double))] = []

    init?(path: String) {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let events = object["traceEvents"] as? [[String: Any]] else { return nil }
        var open: [Int: [(Double, String, [String: Any])]] = [:]
        var flowStarts: [Int: (Int, Double)] = [:]
        for event in events {
            let tid = event["tid"] as? Int ?? 0
            let ts = event["ts"] as? Double ?? 0
            switch event["ph"] as? String {
            case "M":
                if event["name"] as? String == "thread_name" {
                    threadNames[tid] = (event["args"] as? [String: Any])?["name"] as? String
                }
            case "B":
                open[tid, default: []].append((ts, event["name"] as? String ?? "", event["args"] as? [String: Any] ?? [:]))
            case "E":
                if let (begin, name, args) = open[tid]?.popLast() {
                    slices.append(Slice(name: name, tid: tid, begin: begin, end: ts, queue: args["queue"] as? String ?? "",
                                        qos: args["qos"] as? String ?? "", nice: args["nice"] as? Int ?? 0))
                }
            case "s" where event["name"] as? String == "dependency":
                if let id = event["id"] as? Int { flowStarts[id] = (tid, ts) }
            case "f" where event["name"] as? String == "dependency":
                if let id = event["id"] as? Int, let start = flowStarts[id] { flows.append((start, (tid, ts))) }
            default:
                break
            }
        }
    }

    /// The nice values the bodies of queue `queue` ran at, per the trace (which keeps a label's
    /// first 27 bytes).
    func niceValues(ofQueue queue: String) -> Set<Int> {
        Set(slices.filter { !$0.queue.isEmpty && queue.hasPrefix($0.queue) }.map(\.nice))
    }
}
