// W11HandOff.swift — W11: N operations made on the calling thread and released on another,
// never run, handed over through a spinning ring (HandOffRing): W1's memory traffic with no
// queue at all. For the Operation API it is a floor under W1: whatever the queue does, each
// operation is still allocated (with its closure's context) on the submitting CPU and freed on
// a worker's.

/// W11 hand-off.
enum W11HandOff {
    static let id = "W11"
    static let help = """
        hand-off: N operations (BlockOperation(block:) as in W1; core: op_task_create), each
        made on the calling thread and released, without running, on one other thread that
        takes them from a spinning single-producer ring; no queue (dispatch has no operation
        object and shows none). Its time is a floor under W1's: the goal of 2x dispatch in W1
        is within reach only if this is below half of dispatch's W1 time. N = --operations.
        """

    static func workload(_ n: Int) -> ThroughputWorkload {
        ThroughputWorkload(id: id, name: "hand-off", size: "n=\(n)", items: n) { competitor, counter in
            try competitor.runHandOff(n, counter: counter)
        }
    }
}
