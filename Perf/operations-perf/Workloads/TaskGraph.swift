// TaskGraph.swift — the dependency graphs of W4–W6 (chain, wavefront, fan-out/fan-in), built
// once outside the timed section and stored both ways (predecessors and successors, CSR).

/// A DAG of `count` items, numbered in an order where every predecessor comes first.
struct TaskGraph: Sendable {
    let count: Int
    /// Item i's predecessors are `predecessorList[predecessorStart[i] ..< predecessorStart[i + 1]]`.
    let predecessorStart: [Int32]
    let predecessorList: [Int32]
    /// The same edges from the other end, for runtimes that release successors (dispatch).
    let successorStart: [Int32]
    let successors: [Int32]
    /// Predecessors per item.
    let predecessorCount: [Int32]

    /// Builds the graph from each item's predecessors (all lower-numbered).
    init(count: Int, predecessors: (Int) -> [Int]) {
        var start: [Int32] = [0]
        var list: [Int32] = []
        var counts = [Int32](repeating: 0, count: count)
        var successorCounts = [Int32](repeating: 0, count: count)
        for item in 0..<count {
            for predecessor in predecessors(item) {
                precondition(predecessor < item, "TaskGraph: predecessors come first")
                list.append(Int32(predecessor))
                successorCounts[predecessor] += 1
            }
            counts[item] = Int32(list.count) - start[item]
            start.append(Int32(list.count))
        }
        var successorStart: [Int32] = [0]
        for item in 0..<count { successorStart.append(successorStart[item] + successorCounts[item]) }
        var fill = Array(successorStart.dropLast())
        var successors = [Int32](repeating: 0, count: list.count)
        for item in 0..<count {
            for p in start[item]..<start[item + 1] {
                let predecessor = Int(list[Int(p)])
                successors[Int(fill[predecessor])] = Int32(item)
                fill[predecessor] += 1
            }
        }
        self.count = count
        predecessorStart = start
        predecessorList = list
        predecessorCount = counts
        self.successorStart = successorStart
        self.successors = successors
    }

    /// Item `item`'s predecessors.
    func predecessors(of item: Int) -> ArraySlice<Int32> {
        predecessorList[Int(predecessorStart[item])..<Int(predecessorStart[item + 1])]
    }

    /// Item i after item i − 1.
    static func chain(_ n: Int) -> TaskGraph {
        TaskGraph(count: n) { $0 == 0 ? [] : [$0 - 1] }
    }

    /// A side × side grid, row by row: (i, j) after (i − 1, j) and (i, j − 1).
    static func wavefront(_ side: Int) -> TaskGraph {
        TaskGraph(count: side * side) { item in
            let (i, j) = item.quotientAndRemainder(dividingBy: side)
            return (i > 0 ? [item - side] : []) + (j > 0 ? [item - 1] : [])
        }
    }

    /// `rounds` rounds of root → `width` children → sink, each round's sink the next one's root:
    /// 1 + rounds × (width + 1) items.
    static func fanOutFanIn(width: Int, rounds: Int) -> TaskGraph {
        TaskGraph(count: 1 + rounds * (width + 1)) { item in
            guard item > 0 else { return [] }
            let (round, position) = (item - 1).quotientAndRemainder(dividingBy: width + 1)
            let root = round * (width + 1)
            return position < width ? [root] : Array(root + 1...root + width)
        }
    }
}
