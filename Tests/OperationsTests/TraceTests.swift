// TraceTests.swift — the trace of a known graph of operations, parsed (issue 35, item 4): every
// operation's body is one slice named by the operation's name, on a worker's track; a flow arrow
// joins each dependency's body to its dependent's; each slice's nice value is the one its body
// read; the promotion an add caused (a userInitiated operation depending on a utility one) is an
// instant event naming the raised operation's task. An addition (Foundation has no trace).
import Foundation
import Operations
import OperationsCore
import Synchronization
import Testing

@Suite(.serialized) struct TraceTests {
    /// The slices of a parsed trace: per thread, in time order, with their span and name.
    private struct Slice {
        var name: String
        var tid: Int
        var begin: Double
        var end: Double
        var args: [String: Any]
    }

    private func slices(_ events: [[String: Any]]) -> [Slice] {
        var open: [Int: [(Double, String, [String: Any])]] = [:]
        var result: [Slice] = []
        for event in events {
            guard let tid = event["tid"] as? Int, let ts = event["ts"] as? Double else { continue }
            switch event["ph"] as? String {
            case "B": open[tid, default: []].append((ts, event["name"] as? String ?? "", event["args"] as? [String: Any] ?? [:]))
            case "E":
                if let (begin, name, args) = open[tid]?.popLast() {
                    result.append(Slice(name: name, tid: tid, begin: begin, end: ts, args: args))
                }
            default: break
            }
        }
        return result
    }

    @Test func theTraceOfAKnownGraphNamesEveryOperationOnceWithItsNiceAndItsEdges() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("operations-trace-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let niceSeen = Locked<[String: Int32]>([:])
        func operation(_ name: String) -> BlockOperation {
            let operation = BlockOperation { niceSeen.withLock { $0[name] = op_current_thread_nice() } }
            operation.name = name
            return operation
        }
        try OperationsRuntime.startTracing(to: path)
        // A chain of 6, a fan-in of the chain into "sink": 5 + 6 edges.
        let queue = OperationQueue()
        queue.name = "traced graph"
        let chain = (0..<6).map { operation("chain-\($0)") }
        for i in 1..<chain.count { chain[i].addDependency(chain[i - 1]) }
        let sink = operation("sink")
        for link in chain { sink.addDependency(link) }
        queue.addOperations(chain.reversed() + [sink], waitUntilFinished: false)
        // A promotion: a userInitiated operation added to another queue while its utility
        // dependency waits on a suspended queue raises the dependency.
        let utility = OperationQueue()
        utility.name = "traced utility"
        utility.qualityOfService = .utility
        utility.isSuspended = true
        let raised = operation("raised")
        utility.addOperation(raised)
        let urgent = operation("urgent")
        urgent.qualityOfService = .userInitiated
        urgent.addDependency(raised)
        queue.addOperation(urgent)
        utility.isSuspended = false
        guard waitUntilAllOperationsAreFinished(queue), waitUntilAllOperationsAreFinished(utility) else {
            try? OperationsRuntime.stopTracing()
            return
        }
        try OperationsRuntime.stopTracing()

        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let trace = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let events = trace["traceEvents"] as? [[String: Any]] ?? []
        let ours = Set(chain.map { $0.name! } + ["sink", "raised", "urgent"])
        let all = slices(events).filter { ours.contains($0.name) }
        // Every operation once, with the nice value its body read.
        #expect(Dictionary(grouping: all, by: \.name).mapValues(\.count) == Dictionary(uniqueKeysWithValues: ours.map { ($0, 1) }),
                "\(all.map(\.name))")
        let seen = niceSeen.withLock { $0 }
        for slice in all {
            #expect((slice.args["nice"] as? Int).map(Int32.init) == seen[slice.name],
                    "\(slice.name): the trace says nice \(slice.args["nice"] ?? "none"), its body read \(seen[slice.name] ?? -99)")
        }
        #expect(all.first { $0.name == "chain-0" }?.args["queue"] as? String == "traced graph")
        // A flow per edge: its start inside the dependency's slice, its end at the dependent's.
        func slice(at ts: Double, tid: Int, starting: Bool) -> String? {
            all.first { $0.tid == tid && (starting ? abs($0.begin - ts) < 0.0005 : ($0.begin <= ts && ts <= $0.end)) }?.name
        }
        var starts: [Int: String] = [:], ends: [Int: String] = [:]
        for event in events where event["name"] as? String == "dependency" {
            guard let id = event["id"] as? Int, let tid = event["tid"] as? Int, let ts = event["ts"] as? Double else { continue }
            if event["ph"] as? String == "s", let name = slice(at: ts, tid: tid, starting: false) { starts[id] = name }
            if event["ph"] as? String == "f", let name = slice(at: ts, tid: tid, starting: true) { ends[id] = name }
        }
        let edges = Set(starts.compactMap { id, from in ends[id].map { "\(from)→\($0)" } })
        var expected = Set((1..<6).map { "chain-\($0 - 1)→chain-\($0)" } + (0..<6).map { "chain-\($0)→sink" })
        expected.insert("raised→urgent")
        #expect(edges == expected, "missing \(expected.subtracting(edges)), unexpected \(edges.subtracting(expected))")
        // The promotion the add caused names the raised operation's task.
        if op_runtime_qos_promotion() {
            let raisedTask = all.first { $0.name == "raised" }?.args["task"] as? String
            let promotions = events.filter { $0["name"] as? String == "promote" }
            #expect(promotions.contains {
                let args = $0["args"] as? [String: Any]
                return args?["task"] as? String == raisedTask && args?["to"] as? String == "userInitiated"
            }, "no promotion of \(raisedTask ?? "?") to userInitiated among \(promotions.count)")
        }
        let names = events.filter { $0["ph"] as? String == "M" }.compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(all.allSatisfy { slice in names.isEmpty == false && slice.tid > 0 })
    }

    @Test func startingTwiceAndStoppingWithoutATraceAreRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("operations-trace-twice-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: TraceError(operation: "stop", code: EALREADY)) { try OperationsRuntime.stopTracing() }
        try OperationsRuntime.startTracing(to: path, flightRecorderBytes: 1 << 20)
        #expect(OperationsRuntime.isTracing)
        #expect(throws: TraceError(operation: "start", code: EALREADY)) { try OperationsRuntime.startTracing(to: path) }
        try OperationsRuntime.writeTrace()
        #expect(FileManager.default.fileExists(atPath: path))
        try OperationsRuntime.stopTracing()
        #expect(!OperationsRuntime.isTracing)
    }
}
