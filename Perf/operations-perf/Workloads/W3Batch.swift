// W3Batch.swift — W3: N operations created, then added in one addOperations(_:waitUntilFinished: true).

/// W3 batch.
enum W3Batch {
    static let id = "W3"
    static let help = """
        batch: N empty operations created, then addOperations(_:waitUntilFinished: true) (core:
        op_task_create + op_queue_submit_batch + op_queue_wait; dispatch has no batch call and
        shows none). N = --operations.
        """

    static func workload(_ n: Int) -> ThroughputWorkload {
        ThroughputWorkload(id: id, name: "batch", size: "n=\(n)", items: n) { competitor, counter in
            try competitor.runBatch(n, counter: counter)
        }
    }
}
