// Machine.swift — what the run ran on: CPUs, NUMA, nice privileges, the nice table.
import Operations

/// The machine and runtime settings a report was measured with.
struct Machine: Codable {
    var cpuCount: Int
    var nodeCount: Int
    var usesNUMA: Bool
    var negativeNiceAllowed: Bool
    /// Nice per QoS class, background … userInteractive.
    var niceTable: [Int32]
    /// CPU hogs running beside the run (`--hog`); nil in reports from before the option.
    var cpuHogs: Int?
    /// The CPUs they were pinned to (`--hog-cpus`); nil or empty: unpinned.
    var cpuHogPins: [Int]?

    static var current: Machine {
        let topology = OperationsRuntime.topology
        return Machine(
            cpuCount: topology.cpuCount, nodeCount: topology.nodeCount, usesNUMA: topology.usesNUMA,
            negativeNiceAllowed: OperationsRuntime.negativeNiceAllowed, niceTable: OperationsRuntime.niceTable,
            cpuHogs: CPUHogs.count, cpuHogPins: CPUHogs.cpus)
    }

    var description: String {
        "\(cpuCount) CPUs, \(nodeCount) NUMA node(s), NUMA \(usesNUMA ? "in use" : "not used"), "
            + "negative nice \(negativeNiceAllowed ? "allowed" : "not allowed (clamped to 0)"), "
            + "nice table bg/ut/def/ui/uint \(niceTable.map(String.init).joined(separator: "/"))"
            + ((cpuHogs ?? 0) > 0 ? ", beside \(cpuHogs!) CPU hog(s) (--hog)" : "")
            + ((cpuHogPins ?? []).isEmpty ? "" : " pinned to CPU(s) \(cpuHogPins!.map(String.init).joined(separator: ","))")
    }
}
