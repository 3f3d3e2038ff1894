// W5Wavefront.swift — W5: a G×G grid where (i, j) runs after (i − 1, j) and (i, j − 1).

/// W5 wavefront.
enum W5Wavefront {
    static let id = "W5"
    static let help = """
        wavefront: a GxG grid, (i,j) after (i-1,j) and (i,j-1) (dispatch: one group per item
        counting its predecessors, dispatch_group_notify_f). G = --grid.
        """

    static func workload(_ side: Int) -> ThroughputWorkload {
        let graph = TaskGraph.wavefront(side)
        return ThroughputWorkload(id: id, name: "wavefront", size: "grid \(side)x\(side)", items: graph.count) {
            competitor, counter in try competitor.runGraph(graph, counter: counter)
        }
    }
}
