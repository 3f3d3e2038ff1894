// S2Producers.swift — S2: one producer thread per CPU adding empty operations to one shared
// default-width queue at once: the submit path under contention, ns per op in total.

/// S2 producers.
enum S2Producers {
    static let id = "S2"
    static let help = """
        producers: one producer thread per CPU (the calling thread and CPUs − 1 more, released
        together) adding N empty operations in all to one shared default-width queue, then a
        wait; ns per op over all producers (dispatch: dispatch_group_async_f from every producer
        onto the default global queue, one group). Compare with W1, the same with one producer.
        N = --operations.
        """

    static func workload(_ n: Int, producers: Int) -> ThroughputWorkload {
        ThroughputWorkload(id: id, name: "producers", size: "n=\(n), \(producers) thr", items: n) { competitor, counter in
            try competitor.runProducers(n, producers: producers, counter: counter)
        }
    }
}
