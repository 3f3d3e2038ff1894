// ScalingSweep.swift — the scaling sweep (`--sweep`): W1, W4 and W5 at 10^3 … 10^6 operations,
// cost per operation at each size (Foundation capped where it becomes quadratic).

/// The scaling sweep.
enum ScalingSweep {
    static let id = "sweep"
    static let help = """
        (--sweep) W1, W4 and W5 (grid side = sqrt(n)) at n = 10^3, 10^4, 10^5, 10^6: ns per op
        at each size; a flat line is the goal. Small sizes repeat back to back within a sample
        (as every workload does below the minimum sample time). Foundation's cost per op grows
        with n on dependency workloads, so it runs a size only while its projected run (ns/op
        at the previous size, times the growth of ns/op between the two sizes before, times n)
        stays under 1 s, and never above --foundation-cap ops.
        """

    /// Foundation's projected run time above which the sweep leaves it out.
    static let foundationLimitNs = 1e9

    /// The sweep's sizes.
    static let sizes = [1_000, 10_000, 100_000, 1_000_000]

    /// The swept workloads, each made at `n` ops.
    static let workloads: [@Sendable (Int) -> ThroughputWorkload] = [
        { W1Independent.workload($0) },
        { W4Chain.workload($0) },
        { W5Wavefront.workload(Int(Double($0).squareRoot().rounded())) },
    ]

    static func run(
        on competitors: [any Competitor], rounds: Int, minimumSampleNs: Double, foundationCap: Int
    ) throws -> [ThroughputResult] {
        var results: [ThroughputResult] = []
        for make in workloads {
            var foundationCosts: [Double] = []
            for n in sizes {
                let workload = make(n)
                let included = competitors.filter { competitor in
                    competitor.name != FoundationAPI.name
                        || (workload.items <= foundationCap && projectedNs(foundationCosts, items: workload.items) <= foundationLimitNs)
                }
                let result = try ThroughputRunner.measure(workload, on: included, rounds: rounds, minimumSampleNs: minimumSampleNs)
                foundationCosts.append(result.median(FoundationAPI.name))
                results.append(result)
            }
        }
        return results
    }

    /// A run's ns from the ns/op measured at the sizes before (each 10x the one before it).
    private static func projectedNs(_ costs: [Double], items: Int) -> Double {
        guard let last = costs.last else { return 0 }
        let growth = costs.count >= 2 ? max(1, last / costs[costs.count - 2]) : 1
        return last * growth * Double(items)
    }
}
