// W4Chain.swift — W4: a chain of N operations, op i depending on op i − 1.

/// W4 chain.
enum W4Chain {
    static let id = "W4"
    static let help = """
        chain: N operations, op i depends on op i-1; all created and linked, added, then a wait
        (dispatch: item i starts from dispatch_group_notify_f on a group item i-1 leaves).
        N = --chain.
        """

    static func workload(_ n: Int) -> ThroughputWorkload {
        let graph = TaskGraph.chain(n)
        return ThroughputWorkload(id: id, name: "chain", size: "n=\(n)", items: n) { competitor, counter in
            try competitor.runGraph(graph, counter: counter)
        }
    }
}
