// CgroupAndEnvironmentTests.swift — the container CPU limit (cgroup.c) and the on/off
// environment variables (env.c), in child processes: both are read once per process.
//
// A fake cgroup is a scratch directory passed as OPERATIONS_CGROUP_ROOT (the core takes it as
// the process's own cgroup directory). Expectations are written against the child's own
// affinity CPU count, so they hold on any machine, as root or not. No ProcessLock trait:
// nothing runs in this process.
import Foundation
import Glibc
import OperationsCore
import Testing

/// Runs cgroup_probe (Tests/Probes/cgroup_probe.c) with `environment` added to a clean one.
private func runCgroupProbe(_ environment: [String: String], arguments: [String] = [])
    async throws -> ChildResult
{
    let path = try await ProbeBuilder.shared.binary("cgroup_probe").get()
    let result = await runChild(path, arguments, environment: childEnvironment(environment), seconds: 30,
                                backtraceOnTimeout: true)
    let hung = result.timedOut
    try #require(!hung, "the cgroup probe did not exit:\n\(result)")
    try #require(result.exitCode == 0, "the cgroup probe failed:\n\(result)")
    return result
}

/// A scratch directory holding `files` (name → content), to pass as OPERATIONS_CGROUP_ROOT.
private func fakeCgroup(_ files: [String: String]) throws -> URL {
    let directory = try makeScratchDirectory("cgroup")
    for (name, content) in files {
        try content.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }
    return directory
}

/// How often `needle` occurs in `text`.
private func occurrences(of needle: String, in text: String) -> Int {
    text.components(separatedBy: needle).count - 1
}

@Suite
struct CgroupCPULimitTests {
    /// One fake cgroup and what the probe must report for it.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var files: [String: String]
        /// The quota in CPUs (0: none).
        var quota: Double
        /// The width the quota allows (nil: no limit, the affinity count).
        var limit: Int?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "v2 200000 100000", files: ["cpu.max": "200000 100000\n"], quota: 2, limit: 2),
        Case(name: "v2 max 100000", files: ["cpu.max": "max 100000\n"], quota: 0, limit: nil),
        Case(name: "v2 150000 100000 rounds up", files: ["cpu.max": "150000 100000\n"], quota: 1.5, limit: 2),
        Case(name: "v2 50000 100000 is at least 1", files: ["cpu.max": "50000 100000\n"], quota: 0.5, limit: 1),
        Case(name: "v1 150000 / 100000", files: ["cpu.cfs_quota_us": "150000\n", "cpu.cfs_period_us": "100000\n"],
             quota: 1.5, limit: 2),
        Case(name: "v1 -1 (no limit)", files: ["cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"],
             quota: 0, limit: nil),
        Case(name: "no limit files", files: [:], quota: 0, limit: nil),
    ]

    /// Effective CPUs = min(affinity CPUs, ceil(quota / period)), at least 1: a default-width
    /// queue runs no more tasks at once than that, while the workers stay one per CPU.
    @Test(arguments: cases)
    func containerCPUQuotaSetsDefaultWidth(_ fake: Case) async throws {
        let root = try fakeCgroup(fake.files)
        defer { try? FileManager.default.removeItem(at: root) }
        let result = try await runCgroupProbe(["OPERATIONS_CGROUP_ROOT": root.path], arguments: ["run"])
        let values = result.values
        let cpus = try #require(Int(values["cpus"] ?? ""), "\(result)")
        let expected = max(1, min(cpus, fake.limit ?? cpus))
        #expect(values["default_width"] == "\(expected)", "default width for \(fake.name) on \(cpus) CPUs:\n\(result)")
        #expect(abs((Double(values["quota"] ?? "") ?? -1) - fake.quota) < 0.001, "quota:\n\(result)")
        #expect(values["quota_error"] == "-", "\(result)")
        #expect(!result.stderr.contains("cgroup"), "nothing to report:\n\(result)")
        let ran = try #require(Int(values["ran"] ?? ""), "\(result)")
        #expect(ran >= 1 && ran <= expected, "a default-width queue ran \(ran) tasks at once (width \(expected)):\n\(result)")
        if expected == 1 { #expect(ran == 1, "\(result)") }
    }

    /// A limit file that cannot be parsed sets no limit (the affinity count) and is reported
    /// once on stderr and in op_topology_t.cpu_quota_error.
    @Test(arguments: [
        ["cpu.max": "banana\n"], ["cpu.max": "0 100000\n"], ["cpu.max": "200000\n"],
        ["cpu.cfs_quota_us": "lots\n", "cpu.cfs_period_us": "100000\n"],
        ["cpu.cfs_quota_us": "150000\n", "cpu.cfs_period_us": "0\n"],
    ])
    func malformedCPULimitFallsBackToAffinityCountAndSaysSoOnce(_ files: [String: String]) async throws {
        let root = try fakeCgroup(files)
        defer { try? FileManager.default.removeItem(at: root) }
        let result = try await runCgroupProbe(["OPERATIONS_CGROUP_ROOT": root.path])
        let values = result.values
        let cpus = try #require(Int(values["cpus"] ?? ""), "\(result)")
        #expect(values["default_width"] == "\(cpus)", "falls back to the affinity count:\n\(result)")
        #expect(values["quota"] == "0.000", "\(result)")
        #expect(values["quota_error"]?.contains(root.path) == true, "the error names the file:\n\(result)")
        #expect(occurrences(of: "ignoring the cgroup CPU limit", in: result.stderr) == 1,
                "said once on stderr:\n\(result)")
    }

    /// The process's real cgroup (no override): whatever it holds, the width is sane.
    @Test func realCgroupGivesAWidthBetweenOneAndTheCPUCount() async throws {
        let result = try await runCgroupProbe([:])
        let values = result.values
        let cpus = try #require(Int(values["cpus"] ?? ""), "\(result)")
        let width = try #require(Int(values["default_width"] ?? ""), "\(result)")
        #expect(width >= 1 && width <= cpus, "\(result)")
        // Agrees with the Swift layer's report of this test process.
        let topology = currentTopology()
        #expect(topology.default_width >= 1 && topology.default_width <= topology.cpu_count)
    }
}

@Suite
struct EnvironmentSwitchTests {
    /// OPERATIONS_NUMA takes the usual spellings of off, in any case.
    @Test(arguments: ["off", "0", "FALSE", "Off", "no", "Disabled", "disable"])
    func numaSwitchAcceptsUsualOffSpellings(_ value: String) async throws {
        let result = try await runCgroupProbe(["OPERATIONS_NUMA": value])
        #expect(result.values["numa"] == "0", "OPERATIONS_NUMA=\(value) must turn NUMA off:\n\(result)")
        #expect(result.values["reason"] == "disabled by OPERATIONS_NUMA=\(value)", "\(result)")
        #expect(!result.stderr.contains("not recognised"), "\(result)")
    }

    /// The on spellings keep the default (NUMA when the machine has it) without a warning.
    @Test(arguments: ["on", "1", "TRUE", "Yes", "enabled"])
    func numaSwitchAcceptsUsualOnSpellings(_ value: String) async throws {
        let result = try await runCgroupProbe(["OPERATIONS_NUMA": value])
        #expect(result.values["reason"]?.contains("OPERATIONS_NUMA") == false, "\(result)")
        #expect(!result.stderr.contains("not recognised"), "\(result)")
    }

    /// OPERATIONS_NICE_WARNINGS takes the same spellings.
    @Test(arguments: [("0", false), ("false", false), ("OFF", false), ("No", false), ("yes", true), ("ON", true)])
    func niceWarningsSwitchAcceptsUsualSpellings(_ value: String, _ on: Bool) async throws {
        let result = try await runCgroupProbe(["OPERATIONS_NICE_WARNINGS": value])
        #expect(result.values["nice_warnings"] == (on ? "1" : "0"), "OPERATIONS_NICE_WARNINGS=\(value):\n\(result)")
        #expect(!result.stderr.contains("not recognised"), "\(result)")
    }

    /// OPERATIONS_PLACED_POOL_IDLE_MS takes a whole number of milliseconds (blanks around it
    /// forgiven), up to the most whose nanoseconds fit in 64 bits, without a word on stderr.
    @Test(arguments: [("250", 250), (" 300\n", 300), ("1", 1), ("9223372036854", 9_223_372_036_854)])
    func placedPoolIdleTakesAWholeNumberOfMilliseconds(_ value: String, _ milliseconds: Int) async throws {
        let result = try await runCgroupProbe(["OPERATIONS_PLACED_POOL_IDLE_MS": value])
        #expect(result.values["placed_idle_ms"] == "\(milliseconds)", "OPERATIONS_PLACED_POOL_IDLE_MS=\(value):\n\(result)")
        #expect(!result.stderr.contains("OPERATIONS_PLACED_POOL_IDLE_MS"), "\(result)")
    }

    /// A value that is not such a number (text, a unit, a sign, a fraction, zero, beyond the
    /// range, beyond 64 bits) keeps the default (10 000 ms) and says so once: the variable, the
    /// value, the accepted range and the default. It used to be ignored silently, and a large
    /// value overflowed the nanoseconds.
    @Test(arguments: ["abc", "10ms", "-5", "+5", "1.5", "0", "9223372036855", "99999999999999999999"])
    func malformedPlacedPoolIdleKeepsTheDefaultAndSaysSoOnce(_ value: String) async throws {
        let result = try await runCgroupProbe(["OPERATIONS_PLACED_POOL_IDLE_MS": value])
        #expect(result.values["placed_idle_ms"] == "10000", "OPERATIONS_PLACED_POOL_IDLE_MS=\(value):\n\(result)")
        #expect(occurrences(of: "OPERATIONS_PLACED_POOL_IDLE_MS=\"\(value)\" is not recognised", in: result.stderr) == 1,
                "\(result)")
        #expect(result.stderr.contains("a whole number of milliseconds from 1 to 9223372036854"),
                "says what is accepted:\n\(result)")
        #expect(result.stderr.contains("Using the default (10000)"), "\(result)")
    }

    /// An unrecognised value keeps the default and says so once: the variable, the value and
    /// what is accepted.
    @Test(arguments: ["OPERATIONS_NUMA", "OPERATIONS_NICE_WARNINGS"])
    func unrecognisedSwitchValueWarnsOnceAndKeepsTheDefault(_ name: String) async throws {
        let result = try await runCgroupProbe([name: "maybe"])
        #expect(occurrences(of: "\(name)=\"maybe\" is not recognised", in: result.stderr) == 1, "\(result)")
        #expect(result.stderr.contains("off, 0, false, no, disable, disabled"), "lists what is accepted:\n\(result)")
        #expect(result.values["nice_warnings"] == "1", "\(result)")
        #expect(result.values["reason"]?.contains("OPERATIONS_NUMA") == false, "NUMA stays on its default:\n\(result)")
    }
}

/// One table of every environment variable: docs/DESIGN.md's "Environment" section (the
/// reference), the header's ENVIRONMENT section and the DocC article name every variable the
/// runtime's sources name in a string (what they read with getenv / op_env_flag / op_env_int,
/// and what their messages tell a user to set).
@Suite
struct EnvironmentDocumentationTests {
    /// The OPERATIONS_* names in string literals of `text`.
    private static func namesInStrings(_ text: String) -> Set<String> {
        var names = Set<String>()
        for line in text.split(separator: "\n") {
            for literal in line.matches(of: /"(?:[^"\\]|\\.)*"/) {
                for name in literal.output.matches(of: /OPERATIONS_[A-Z0-9_]+/) { names.insert(String(name.output)) }
            }
        }
        return names
    }

    /// Every OPERATIONS_* name in `text`.
    private static func names(_ text: Substring) -> Set<String> {
        Set(text.matches(of: /OPERATIONS_[A-Z0-9_]+/).map { String($0.output) })
    }

    private static func read(_ path: String) throws -> String {
        try String(contentsOf: PackageLayout.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The part of `text` from the line holding `start` to the next holding `end`.
    private static func section(_ text: String, from start: String, to end: String) throws -> Substring {
        let lower = try #require(text.range(of: start), "no '\(start)'")
        let upper = try #require(text.range(of: end, range: lower.upperBound..<text.endIndex), "no '\(end)' after '\(start)'")
        return text[lower.lowerBound..<upper.lowerBound]
    }

    @Test func everyVariableTheRuntimeReadsIsInTheThreeTables() throws {
        let fileManager = FileManager.default
        var sources: [String] = PackageLayout.coreSources
        for folder in ["Sources/Operations", "Sources/OperationsImplementation", "Sources/OperationsNetworking"] {
            let directory = PackageLayout.root.appendingPathComponent(folder)
            let files = (try? fileManager.contentsOfDirectory(atPath: directory.path)) ?? []
            sources += files.filter { $0.hasSuffix(".swift") }.map { directory.appendingPathComponent($0).path }
        }
        var read = Set<String>()
        for path in sources { read.formUnion(Self.namesInStrings(try String(contentsOfFile: path, encoding: .utf8))) }
        // The scan works: the variables known when this test was written are among them.
        let known: Set<String> = [
            "OPERATIONS_QOS_NICE", "OPERATIONS_QOS_PROMOTION", "OPERATIONS_NUMA", "OPERATIONS_NICE_WARNINGS",
            "OPERATIONS_SHORT_SLICE", "OPERATIONS_CGROUP_ROOT", "OPERATIONS_PLACED_POOL_IDLE_MS",
            "OPERATIONS_FORCE_SIDE_TABLE", "OPERATIONS_FAULT_THREAD_CREATE", "OPERATIONS_FAULT_PROC",
            "OPERATIONS_FAULT_SETPRIORITY", "OPERATIONS_RACE_SEED",
        ]
        #expect(read.isSuperset(of: known), "the sources' scan missed \(known.subtracting(read).sorted())")
        let tables: [(String, Substring)] = [
            ("docs/DESIGN.md's Environment section",
             try Self.section(try Self.read("docs/DESIGN.md"), from: "### Environment", to: "### NUMA")),
            ("operations_core.h's ENVIRONMENT section",
             try Self.section(try Self.read("CShims/OperationsCore/include/operations_core.h"),
                              from: " * ENVIRONMENT", to: " * CONTAINER CPU LIMITS")),
            ("the DocC article EnvironmentVariables.md",
             Substring(try Self.read("Sources/Operations/Operations.docc/EnvironmentVariables.md"))),
        ]
        for (name, table) in tables {
            let missing = read.subtracting(Self.names(table))
            #expect(missing.isEmpty, "\(name) does not name \(missing.sorted())")
        }
    }
}
