// ClampTests.swift — the paths that depend on privilege and on the environment at start-up, run
// for real in child processes: Tests/Probes/nice_clamp_probe.c, compiled with the system's `cc`
// against the core's sources.
//
//   clamp mode: the child drops RLIMIT_NICE to 0 and CAP_SYS_NICE (raw capget/capset) before the
//               core starts, then runs userInteractive tasks (nice -4 wanted).
//   env mode:   the child keeps root and reports what OPERATIONS_QOS_NICE did.
import Foundation
import Glibc
import OperationsCore
import Testing

enum NiceProbe {
    /// Bound for one probe run (it normally takes well under a second).
    static let runSeconds: Double = 30

    static func run(_ mode: String, environment extra: [String: String] = [:]) async throws -> ChildResult {
        let path = try await ProbeBuilder.shared.binary("nice_clamp_probe").get()
        return await runChild(path, [mode], environment: childEnvironment(extra), seconds: runSeconds,
                              backtraceOnTimeout: true)
    }
}

/// Lines of stderr that are the core's one-line clamp report.
private func clampWarnings(_ result: ChildResult) -> [Substring] {
    result.stderr.split(separator: "\n").filter { $0.hasPrefix("operations: nice") }
}

// No ProcessLock trait: everything happens in child processes (their CPU time and nice values
// are not this process's), so these tests may run beside anything, including the quiet suites.
@Suite
struct ClampTests {
    @Test func withoutPrivilegeNiceIsClampedReportedOnceAndTheTaskStillRuns() async throws {
        let result = try await NiceProbe.run("clamp")
        let hung = result.timedOut
        try #require(!hung, "the clamp probe did not exit within \(NiceProbe.runSeconds) s:\n\(result)")
        #expect(result.exitCode == 0, "the clamp probe failed:\n\(result)")
        let values = result.values
        #expect(values["can_lower"] == "0", "the probe still could lower its nice value:\n\(result)")
        #expect(values["ran"] == "3", "not every task ran:\n\(result)")
        #expect(values["clamped"] == "1", "op_runtime_nice_clamped() is false:\n\(result)")
        #expect(values["negative_allowed"] == "0", "op_runtime_negative_nice_allowed() is true:\n\(result)")
        #expect(values["lowest"] == "20", "with RLIMIT_NICE 0 the lowest settable nice is 20:\n\(result)")
        let start = Int(values["start_nice"] ?? "") ?? 0
        for key in ["body_nice", "body_nice_high", "body_nice_low"] {
            let nice = Int(values[key] ?? "")
            #expect(nice != nil && nice! >= 0 && nice! >= start,
                    "\(key) = \(values[key] ?? "missing"): a body ran below the nice value it could not lower past (\(start)):\n\(result)")
        }
        #expect(values["body_nice"] == "\(start)", "userInteractive body without privilege should run at the thread's own nice \(start):\n\(result)")
        for nice in (values["ui_worker_nice"] ?? "").split(separator: ",") {
            #expect(Int(nice) == start, "a userInteractive worker runs at \(nice), not \(start):\n\(result)")
        }
        let warnings = clampWarnings(result)
        #expect(warnings.count == 1, "expected exactly one clamp warning line, found \(warnings.count):\n\(result)")
    }

    @Test func clampWarningIsSilencedByTheEnvironment() async throws {
        let result = try await NiceProbe.run("clamp", environment: ["OPERATIONS_NICE_WARNINGS": "0"])
        let hung = result.timedOut
        try #require(!hung, "the clamp probe did not exit within \(NiceProbe.runSeconds) s:\n\(result)")
        #expect(result.exitCode == 0, "the clamp probe failed:\n\(result)")
        #expect(result.values["clamped"] == "1", "the clamp must still be recorded:\n\(result)")
        #expect(result.values["ran"] == "3")
        #expect(clampWarnings(result).isEmpty, "OPERATIONS_NICE_WARNINGS=0 but a clamp warning was printed:\n\(result)")
    }

    @Test func malformedNiceEnvironmentIsRejectedWholeWithAMessage() async throws {
        let result = try await NiceProbe.run("env", environment: ["OPERATIONS_QOS_NICE": "bogus=1"])
        let hung = result.timedOut
        try #require(!hung,
                     "the probe hung at start-up with OPERATIONS_QOS_NICE=bogus=1 (terminated after \(NiceProbe.runSeconds) s):\n\(result)")
        #expect(result.exitCode == 0, "the env probe failed:\n\(result)")
        #expect(result.stderr.contains("bogus=1"), "stderr does not name the bad entry 'bogus=1':\n\(result)")
        let error = result.values["env_error"] ?? "(missing)"
        #expect(error != "(null)" && error.contains("bogus=1"), "op_runtime_nice_env_error() = \(error):\n\(result)")
        #expect(result.values["table"] == "10,2,0,-2,-4", "a rejected spec changed the table:\n\(result)")
        #expect(result.values["ran"] == "3")
    }

    @Test func niceEnvironmentSetsTheTableAndTheWorkers() async throws {
        let result = try await NiceProbe.run("env", environment: ["OPERATIONS_QOS_NICE": "userInteractive=-8,background=15"])
        let hung = result.timedOut
        try #require(!hung,
                     "the probe hung at start-up with OPERATIONS_QOS_NICE set (terminated after \(NiceProbe.runSeconds) s):\n\(result)")
        #expect(result.exitCode == 0, "the env probe failed:\n\(result)")
        #expect(result.values["table"] == "15,2,0,-2,-8", "table after OPERATIONS_QOS_NICE:\n\(result)")
        #expect(result.values["env_error"] == "(null)", "a good spec was reported as an error:\n\(result)")
        let uiNice = (result.values["ui_worker_nice"] ?? "").split(separator: ",").map(String.init)
        #expect(!uiNice.isEmpty && uiNice.allSatisfy { $0 == "-8" }, "userInteractive workers run at \(uiNice), expected -8:\n\(result)")
        let backgroundNice = (result.values["background_worker_nice"] ?? "").split(separator: ",").map(String.init)
        #expect(!backgroundNice.isEmpty && backgroundNice.allSatisfy { $0 == "15" }, "background workers run at \(backgroundNice), expected 15:\n\(result)")
        #expect(result.values["body_nice"] == "-8", "a userInteractive body ran at \(result.values["body_nice"] ?? "?"):\n\(result)")
        #expect(result.values["body_nice_high"] == "-13")
        #expect(result.values["body_nice_low"] == "-3")
        #expect(!result.stderr.contains("operations:"), "unexpected message:\n\(result)")
    }
}

/// When an unprivileged process is told on stderr that what it asked for was changed: only when
/// something it asked for is, in one line, once per process, and never after
/// `op_runtime_set_clamp_warning(false)` (Tests/Probes/clamp_warning_probe.c, which drops to
/// `nobody` as root, or gives up CAP_SYS_NICE, with RLIMIT_NICE 0: the table is shifted).
@Suite
struct ClampWarningTests {
    static func run(_ mode: String, environment extra: [String: String] = [:]) async throws -> ChildResult {
        let path = try await ProbeBuilder.shared.binary("clamp_warning_probe").get()
        let result = await runChild(path, [mode], environment: childEnvironment(extra),
                                    seconds: NiceProbe.runSeconds, backtraceOnTimeout: true)
        try #require(!result.timedOut, "the clamp-warning probe hung:\n\(result)")
        try #require(result.exitCode == 0, "the clamp-warning probe failed:\n\(result)")
        if getuid() == 0 { #expect(result.values["uid"] == "65534", "the child did not become nobody:\n\(result)") }
        return result
    }

    /// Default-QoS work only: the table is shifted (default runs at the shifted value), but
    /// nothing the process asked for was below what it may set, so stderr stays empty (it got
    /// a 574-byte line at first use).
    @Test func unprivilegedProcessRunningOnlyDefaultWorkPrintsNothing() async throws {
        let result = try await Self.run("default")
        #expect(result.values["ran"] == "8", "\(result)")
        #expect(result.values["kind"] == "\(OP_NICE_TABLE_SHIFTED.rawValue)", "the table is shifted:\n\(result)")
        #expect(result.values["clamped"] == "0", "\(result)")
        #expect(result.stderr.isEmpty, "default-QoS work only, yet stderr got:\n\(result.stderr)")
    }

    /// A userInteractive task (nice -4 asked, the process may not go below its own nice) and
    /// thread priorities clamped below the floor: exactly one line, naming what was asked and
    /// how to silence it; the clamp is still recorded.
    @Test func unprivilegedProcessAskingForAClampedClassPrintsExactlyOneLine() async throws {
        // The short slice's own report (a kernel older than 6.12) is another subject: kept out.
        let result = try await Self.run("clamped", environment: ["OPERATIONS_SHORT_SLICE": "off"])
        #expect(result.values["ran"] == "3", "\(result)")
        #expect(result.values["clamped"] == "1", "op_runtime_nice_clamped() is false:\n\(result)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        try #require(lines.count == 1, "expected exactly one line on stderr:\n\(result.stderr)")
        let line = lines[0]
        #expect(line.hasPrefix("operations: nice -4 was asked for (QoS class userInteractive)"), "\(line)")
        for part in ["shifted nice table", "CAP_SYS_NICE", "OPERATIONS_QOS_NICE", "op_runtime_set_clamp_warning(false)"] {
            #expect(line.contains(part), "the line lacks '\(part)': \(line)")
        }
    }

    /// The same requests after op_runtime_set_clamp_warning(false): nothing on stderr, and the
    /// clamp is still recorded (it used to print the shift at start-up, before the switch).
    @Test func clampWarningSwitchedOffAtRunTimePrintsNothing() async throws {
        let result = try await Self.run("silenced")
        #expect(result.values["ran"] == "3", "\(result)")
        #expect(result.values["warnings"] == "0", "\(result)")
        #expect(result.values["clamped"] == "1", "the clamp must still be recorded:\n\(result)")
        #expect(result.stderr.isEmpty, "warnings switched off, yet stderr got:\n\(result.stderr)")
    }
}
