// TraceTests.swift — the trace written by OPERATIONS_TRACE at a normal exit (issue 35, item 4),
// in a child process (a C probe): it parses as Chrome Trace Event JSON, holds one slice per task
// of a known chain, a flow arrow per dependency edge, worker tracks named by class and CPU; the
// flight recorder keeps only the latest events and says so. The probes (USDT) are listed in the
// library's notes. TraceTests in OperationsTests parse a Swift graph's trace in process.
import Foundation
import Glibc
import OperationsCore
import Testing

@Suite struct TraceTests {
    /// Runs the trace probe with `environment` and returns its trace, parsed.
    private func traceOfProbe(count: Int, forward: Bool = false, _ environment: [String: String]) async throws -> [String: Any] {
        let directory = try makeScratchDirectory("trace")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("trace.json").path
        let probe = try await ProbeBuilder.shared.binary("trace_at_exit_probe").get()
        let run = await runChild(probe, [String(count)] + (forward ? ["forward"] : []),
                                 environment: childEnvironment(environment.merging(["OPERATIONS_TRACE": path]) { $1 }),
                                 backtraceOnTimeout: true)
        try #require(run.succeeded, "\(run)")
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any],
                            "the trace is not a JSON object: \(String(decoding: data.prefix(400), as: UTF8.self))")
    }

    @Test func theTraceOfAChainWrittenAtExitHasASliceATaskAndAFlowAnEdge() async throws {
        let trace = try await traceOfProbe(count: 10, [:])
        let events = trace["traceEvents"] as? [[String: Any]] ?? []
        let slices = events.filter {
            $0["ph"] as? String == "B" && ($0["args"] as? [String: Any])?["queue"] as? String == "traced chain"
        }
        #expect(slices.count == 10, "\(slices.count) slices of the chain's tasks")
        let tasks = Set(slices.compactMap { ($0["args"] as? [String: Any])?["task"] as? String })
        #expect(tasks.count == 10, "each task once")
        #expect(slices.allSatisfy { ($0["args"] as? [String: Any])?["qos"] as? String == "default" })
        let flowStarts = events.filter { $0["ph"] as? String == "s" && $0["name"] as? String == "dependency" }
        let flowEnds = events.filter { $0["ph"] as? String == "f" && $0["name"] as? String == "dependency" }
        #expect(flowStarts.count == 9 && flowEnds.count == 9, "\(flowStarts.count) / \(flowEnds.count) dependency flows of 9 edges")
        #expect(Set(flowStarts.compactMap { $0["id"] as? Int }) == Set(flowEnds.compactMap { $0["id"] as? Int }))
        let submits = events.filter { $0["ph"] as? String == "f" && $0["name"] as? String == "submit" }
        #expect(submits.count >= 10)
        let names = events.filter { $0["ph"] as? String == "M" && $0["name"] as? String == "thread_name" }
            .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(names.contains { $0.hasPrefix("op-dflt-") }, "worker tracks: \(names)")
        let other = trace["otherData"] as? [String: Any]
        #expect(other?["mode"] as? String == "whole trace" && other?["dropped"] as? Int == 0, "\(other ?? [:])")
    }

    /// A chain long enough that the writer's maps grow many times while it follows the edges,
    /// submitted first to last, so that the writer often meets a dependent first at its edge:
    /// every edge still has its flow, start and end (the writer once kept a pointer into its map
    /// across a growth there: flows were lost).
    @Test func aLongChainKeepsAFlowPerEdge() async throws {
        let trace = try await traceOfProbe(count: 3000, forward: true, [:])
        let events = trace["traceEvents"] as? [[String: Any]] ?? []
        let starts = Set(events.filter { $0["ph"] as? String == "s" && $0["name"] as? String == "dependency" }.compactMap { $0["id"] as? Int })
        let ends = Set(events.filter { $0["ph"] as? String == "f" && $0["name"] as? String == "dependency" }.compactMap { $0["id"] as? Int })
        #expect(starts.count == 2999 && ends == starts, "\(starts.count) flows started, \(ends.count) ended, of 2999 edges")
    }

    /// The flight recorder keeps about the last megabyte: far fewer slices than tasks, and the
    /// trace still parses (rings cut events off at any point).
    @Test func theFlightRecorderKeepsTheLatestEvents() async throws {
        let tasks = 200_000
        let trace = try await traceOfProbe(count: tasks, ["OPERATIONS_TRACE_FLIGHT_MB": "1"])
        let events = trace["traceEvents"] as? [[String: Any]] ?? []
        let slices = events.filter { $0["ph"] as? String == "B" }.count
        #expect(slices > 0 && slices < tasks, "\(slices) slices of \(tasks) tasks")
        #expect((trace["otherData"] as? [String: Any])?["mode"] as? String == "flight recorder")
    }

    /// Bad values of the trace's API are refused with a specific error. (A stop without a trace
    /// and a second start are checked by OperationsTests' TraceTests, which own the process's
    /// trace: a stop from here could end theirs.)
    @Test func theTraceAPIRefusesBadCalls() {
        #expect(op_trace_start(nil, 0) == EINVAL)
        #expect(op_trace_start("", 0) == EINVAL)
    }
}
