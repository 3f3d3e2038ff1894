// W6FanOutFanIn.swift — W6: R rounds of root → K children → sink, each sink the next root.

/// W6 fan-out/fan-in.
enum W6FanOutFanIn {
    static let id = "W6"
    static let help = """
        fan-out/fan-in: R rounds of root -> K children -> sink, each round's sink the next
        round's root, as one graph (dispatch: groups as in W5). K = --fan-out, R = --fan-rounds.
        """

    static func workload(width: Int, rounds: Int) -> ThroughputWorkload {
        let graph = TaskGraph.fanOutFanIn(width: width, rounds: rounds)
        return ThroughputWorkload(id: id, name: "fan-out/in", size: "K=\(width) R=\(rounds)", items: graph.count) {
            competitor, counter in try competitor.runGraph(graph, counter: counter)
        }
    }
}
