// CoreWorkloads.swift — the core issue's three measurements: empty tasks, a dependency chain,
// and cost per task across sizes; each as (name, implementations) run in interleaved rounds.
import OperationsCore

/// One implementation of one workload: runs `n` items counting into `counter`, returns ns.
struct Contender {
    var name: String
    var run: (_ n: Int, _ counter: UnsafeMutablePointer<Int64>) throws -> UInt64
}

/// A workload measured on several implementations in the same process.
struct Workload {
    var name: String
    var summary: String
    var contenders: [Contender]
    /// The workload runs at `--size` divided by this (Foundation is slow enough that the same
    /// size would take minutes).
    var sizeDivisor = 1
}

enum CoreWorkloads {
    static func all(timeout: Int64) -> [Workload] {
        [
            Workload(
                name: "independent",
                summary: "empty tasks on a default-width queue / the global queue, then wait",
                contenders: [
                    Contender(name: "core") { try CoreImplementation.independent($0, counter: $1, timeout: timeout) },
                    Contender(name: "dispatch") { DispatchImplementation.independent($0, counter: $1) },
                ]),
            Workload(
                name: "serial",
                summary: "empty tasks on a width-1 queue / a serial dispatch queue, then wait",
                contenders: [
                    Contender(name: "core") { try CoreImplementation.serial($0, counter: $1, timeout: timeout) },
                    Contender(name: "dispatch") { DispatchImplementation.serial($0, counter: $1) },
                ]),
            Workload(
                name: "chain",
                summary: "task i depends on task i-1 / group_notify chains of dispatch groups",
                contenders: [
                    Contender(name: "core") { try CoreImplementation.chain($0, counter: $1, timeout: timeout) },
                    Contender(name: "dispatch") { DispatchImplementation.chain($0, counter: $1) },
                ]),
            Workload(
                name: "operations",
                summary: "empty BlockOperations added one by one: Operations vs Foundation vs dispatch",
                contenders: [
                    Contender(name: "operations") { OperationsImplementation.independent($0, counter: $1) },
                    Contender(name: "foundation") { FoundationImplementation.independent($0, counter: $1) },
                    Contender(name: "dispatch") { DispatchImplementation.independent($0, counter: $1) },
                ],
                sizeDivisor: 10),
        ]
    }
}
