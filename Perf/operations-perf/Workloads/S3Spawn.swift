// S3Spawn.swift — S3: operations that add operations to their own queue, a tree (fan 10, depth
// 5 by default: 10^5 leaves, 111111 operations): work released on a worker, ns per op.

/// S3 spawn.
enum S3Spawn {
    static let id = "S3"
    static let help = """
        spawn: a tree of empty operations on one default-width queue; the root is added from
        outside, and every operation above the leaves adds --spawn-fan children (default 10) to
        its own queue from its body, --spawn-depth levels (default 5: 111111 operations); then a
        wait; ns per op (dispatch: dispatch_group_async_f into one group from the bodies).
        """

    /// Operations in a tree of `fan` children per node, `depth` levels below the root.
    static func items(fan: Int, depth: Int) -> Int {
        var total = 0, level = 1
        for _ in 0...depth {
            total += level
            level *= fan
        }
        return total
    }

    static func workload(fan: Int, depth: Int) -> ThroughputWorkload {
        ThroughputWorkload(id: id, name: "spawn", size: "fan \(fan), depth \(depth)", items: items(fan: fan, depth: depth)) {
            competitor, counter in
            try competitor.runSpawn(fan: fan, depth: depth, counter: counter)
        }
    }
}
