// W10ByHand.swift — W10: N operations created and started by hand on the calling thread, no
// queue: the cost of an operation's own life (allocation, state changes, release), which every
// queued operation pays on top of the queue's work. It is the floor under W1 for the
// Operation API.

/// W10 by hand.
enum W10ByHand {
    static let id = "W10"
    static let help = """
        by hand: N empty operations, each created, started with start() on the calling thread
        and released; no queue (core: op_task_create + the body + op_task_complete +
        op_task_release; dispatch has no operation object and shows none). The floor under W1.
        N = --operations.
        """

    static func workload(_ n: Int) -> ThroughputWorkload {
        ThroughputWorkload(id: id, name: "by hand", size: "n=\(n)", items: n) { competitor, counter in
            try competitor.runByHand(n, counter: counter)
        }
    }
}
