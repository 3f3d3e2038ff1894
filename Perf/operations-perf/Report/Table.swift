// Table.swift — the results table on stdout.
enum Table {
    static func printResults(_ results: [WorkloadResult]) {
        print("")
        print(pad("workload", 12) + pad("n", 10) + pad("core ns/task", 14) + pad("dispatch ns/task", 18)
              + "dispatch/core (median of per-round ratios)")
        for result in results where result.nsPerItem["operations"] == nil {
            let core = result.nsPerItem["core"]?.median ?? .nan
            let dispatch = result.nsPerItem["dispatch"]?.median ?? .nan
            print(pad(result.workload, 12) + pad("\(result.size)", 10) + pad(format(core), 14)
                  + pad(format(dispatch), 18) + format(result.ratios.median) + "x")
        }
        for result in results where result.nsPerItem["operations"] != nil {
            print("")
            print("Swift layer, \(result.size) empty BlockOperations: operations \(format(result.nsPerItem["operations"]!.median)) ns/op, "
                  + "foundation \(format(result.nsPerItem["foundation"]?.median ?? .nan)) ns/op, dispatch \(format(result.nsPerItem["dispatch"]?.median ?? .nan)) ns/item; "
                  + "foundation/operations \(format(result.foundationRatios.median))x, dispatch/operations \(format(result.ratios.median))x")
        }
    }

    static func printSweep(_ rows: [WorkloadResult]) {
        print("")
        print("cost per task across sizes (medians, ns/task; sizes < 10^5 repeated to 10^5 tasks per sample)")
        print(pad("workload", 12) + pad("n", 10) + pad("core", 10) + "dispatch")
        for row in rows {
            print(pad(row.workload, 12) + pad("\(row.size)", 10)
                  + pad(format(row.nsPerItem["core"]?.median ?? .nan), 10)
                  + format(row.nsPerItem["dispatch"]?.median ?? .nan))
        }
    }

    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "-" }
        let scaled = (value * 100).rounded() / 100
        return "\(scaled)"
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
