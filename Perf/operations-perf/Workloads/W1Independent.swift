// W1Independent.swift — W1: N empty operations added one by one to a default-width queue,
// then a wait for all.

/// W1 independent.
enum W1Independent {
    static let id = "W1"
    static let help = """
        independent: N empty operations added one by one to a default-width queue, then a wait
        for all (dispatch: dispatch_group_async_f onto the default global queue + group wait;
        core: op_queue_submit_f). N = --operations.
        """

    static func workload(_ n: Int) -> ThroughputWorkload {
        ThroughputWorkload(id: id, name: "independent", size: "n=\(n)", items: n) { competitor, counter in
            try competitor.runEach(n, width: .default, counter: counter)
        }
    }
}
