// UnprivilegedNiceTests.swift — QoS classes and thread priorities without the privilege to lower
// nice values (no CAP_SYS_NICE, RLIMIT_NICE 0: the usual container or unprivileged user), run for
// real in a child process (Tests/Probes/unprivileged_nice_probe.c) that gives the privilege up
// before the core starts: as root (CI) it becomes `nobody`, otherwise it drops CAP_SYS_NICE; both
// with RLIMIT_NICE 0. The child reports the nice value and thread each task body saw, per queue
// QoS, per task QoS on a default queue and on a serial one, and for thread priorities.
import Foundation
import Glibc
import Testing

private let qosNames = ["background", "utility", "default", "userInitiated", "userInteractive"]
private let libdispatchTable = [10, 2, 0, -2, -4]

/// The nice value a body of class `qos` at `threadPriority` should see with `table` and `floor`.
private func expectedNice(_ table: [Int], floor: Int, qos: Int, threadPriority: Double) -> Int {
    let wanted = table[qos] + Int(((0.5 - threadPriority) * 10).rounded(.toNearestOrAwayFromZero))
    return max(floor, min(19, wanted))
}

// No ProcessLock trait: everything happens in the child.
@Suite
struct UnprivilegedNiceTests {
    static func run(_ environment: [String: String] = [:]) async throws -> ChildResult {
        let path = try await ProbeBuilder.shared.binary("unprivileged_nice_probe").get()
        let result = await runChild(path, [], environment: childEnvironment(environment),
                                    seconds: NiceProbe.runSeconds, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the probe hung:\n\(result)")
        try #require(result.exitCode == 0, "the probe failed:\n\(result)")
        return result
    }

    /// Without privilege the default table is shifted up so userInteractive sits at the floor
    /// (the process's nice), every class keeps its own value and its own workers, and every
    /// body runs at its class's value plus its thread priority's offset, never below the floor.
    @Test func everyQoSAndThreadPriorityTakesEffectWithoutPrivilege() async throws {
        let result = try await Self.run()
        let values = result.values
        #expect(values["can_lower"] == "0", "\(result)")
        if getuid() == 0 { #expect(values["uid"] == "65534", "the child did not become nobody:\n\(result)") }
        let floor = try #require(Int(values["floor"] ?? ""), "\(result)")
        let start = try #require(Int(values["start_nice"] ?? ""), "\(result)")
        #expect(floor == start, "with RLIMIT_NICE 0 the floor is the process's nice:\n\(result)")
        let table = (values["table"] ?? "").split(separator: ",").compactMap { Int($0) }
        try #require(table.count == 5, "\(result)")
        let shift = max(0, floor - libdispatchTable.min()!)
        #expect(table == libdispatchTable.map { min(19, $0 + shift) }, "the shifted table:\n\(result)")
        #expect(values["kind"] == (shift > 0 ? "1" : "0"), "op_runtime_nice_table_kind:\n\(result)")
        #expect(Set(table).count == 5 || table.max() == 19, "the classes are not kept apart: \(table)")
        if shift > 0 {
            #expect(result.stderr.contains("shifted nice table"), "the shift is announced:\n\(result)")
            #expect(result.stderr.contains("CAP_SYS_NICE") && result.stderr.contains("OPERATIONS_QOS_NICE"),
                    "the notice says how to change it:\n\(result)")
        }

        for (qos, name) in qosNames.enumerated() {
            let want = expectedNice(table, floor: floor, qos: qos, threadPriority: 0.5)
            #expect(values["queue_\(name)_nice"] == "\(want)", "a \(name) queue's body:\n\(result)")
            #expect(values["op_\(name)_nice"] == "\(want)", "a \(name) operation on a default queue:\n\(result)")
            // On the serial queue the userInteractive operation, submitted behind the others
            // while the queue was suspended, raises every one ahead of it to its class (QoS
            // promotion): they all run on userInteractive's workers.
            let serialWant = expectedNice(table, floor: floor, qos: 4, threadPriority: 0.5)
            #expect(values["serial_\(name)_nice"] == "\(serialWant)", "a \(name) operation on a serial queue:\n\(result)")
            let workers = (values["workers_\(name)"] ?? "").split(separator: ",").map(String.init)
            #expect(!workers.isEmpty && workers.allSatisfy { $0 == "\(want)" }, "\(name) workers: \(workers)\n\(result)")
        }
        // Each class runs on its own threads: the per-operation bodies of the five classes ran on
        // five different threads.
        let tids = qosNames.compactMap { values["op_\($0)_tid"] }
        #expect(Set(tids).count == 5, "operations of five classes ran on threads \(tids):\n\(result)")
        #expect(values["serial_order"] == "0,1,2,3,4", "a serial queue's order:\n\(result)")

        for (qos, name) in [(2, "default"), (1, "utility"), (4, "userInteractive")] {
            for percent in [0, 25, 75, 100] {
                let want = expectedNice(table, floor: floor, qos: qos, threadPriority: Double(percent) / 100)
                #expect(values["tp_\(name)_\(percent)_nice"] == "\(want)",
                        "a \(name) body at threadPriority \(Double(percent) / 100):\n\(result)")
            }
        }
        // QoS promotion without privilege: the queued task moved to userInteractive's workers;
        // the body running ahead of it kept background's nice value (a thread may not lower
        // another's), and its thread is at background's value afterwards.
        #expect(values["promo_queued_nice"] == "\(expectedNice(table, floor: floor, qos: 4, threadPriority: 0.5))",
                "the promoted queued task:\n\(result)")
        #expect(values["promo_queued_class"] == "4", "\(result)")
        #expect(values["promo_held_first"] == "\(table[0])" && values["promo_held_lowest"] == "\(table[0])",
                "the running body ahead:\n\(result)")
        #expect(values["promo_held_after"] == "\(table[0])", "\(result)")
        #expect(values["promo_effective_after"] == "0", "the queue's raise was undone:\n\(result)")
        #expect(values["op_utility_tp_100_nice"] == "\(expectedNice(table, floor: floor, qos: 1, threadPriority: 1))",
                "\(result)")
    }

    /// OPERATIONS_QOS_NICE overrides the shift; values below the floor are clamped with a warning
    /// that says what was asked, what is allowed, why, and how to change it.
    @Test func environmentTableOverridesTheShiftAndClampsAreExplained() async throws {
        let result = try await Self.run(["OPERATIONS_QOS_NICE": "userInteractive=-3,background=12"])
        let values = result.values
        #expect(values["kind"] == "2", "\(result)")
        let floor = try #require(Int(values["floor"] ?? ""), "\(result)")
        #expect(values["table"] == "12,2,0,-2,-3", "\(result)")
        #expect(values["queue_background_nice"] == "12", "\(result)")
        #expect(values["queue_userInteractive_nice"] == "\(max(floor, -3))", "\(result)")
        let warning = result.stderr.split(separator: "\n").first { $0.hasPrefix("operations: nice") }
        if floor > -2 {
            let line = try #require(warning, "no clamp warning:\n\(result)")
            for part in ["was asked for", "CAP_SYS_NICE", "RLIMIT_NICE", "running at", "OPERATIONS_QOS_NICE"] {
                #expect(line.contains(part), "the warning lacks '\(part)': \(line)")
            }
            #expect(!line.contains("lowest allowed here: 20"), "\(line)")
        }
    }
}
