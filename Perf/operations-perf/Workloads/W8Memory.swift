// W8Memory.swift — W8: memory per operation queued on a suspended queue (heap bytes from
// mallinfo2, resident bytes from /proc/self/statm), and enqueue and drain time per operation.
import DispatchBaselines

/// W8 memory.
enum W8Memory {
    static let id = "W8"
    static let help = """
        memory: N counting operations added to a suspended default-width queue (closures that
        capture nothing); heap bytes per op (mallinfo2 in-use + mmap'd, after malloc_trim) and
        resident bytes per op, then resume: enqueue and drain ns per op. N =
        --memory-operations.
        """

    /// One result per competitor, rounds interleaved.
    static func run(on competitors: [any Competitor], operations n: Int, rounds: Int) throws -> [MemoryResult] {
        var results = competitors.map { MemoryResult(contender: $0.name, operations: n, rounds: []) }
        for round in 0..<rounds {
            for k in 0..<competitors.count {
                let index = (round + k) % competitors.count
                let competitor = competitors[index]
                Progress.show("\(id) memory n=\(n): round \(round + 1)/\(rounds) \(competitor.name)")
                let sample = try Watchdog.guarding("\(id) memory n=\(n) on \(competitor.name)") {
                    try measure(n, on: competitor)
                }
                results[index].rounds.append(sample)
            }
        }
        return results
    }

    /// What W8's items count into: one for the process, so the closures of closure-based
    /// runtimes capture nothing (the Foundation figure, 896 B, is measured that way) and
    /// the heap figure is the runtime's own. W8 runs on one thread, one measurement at a time.
    static let counter = Counter()

    /// Fills a suspended queue with `n` counting ops, measures, then drains it and checks the count.
    static func measure(_ n: Int, on competitor: any Competitor) throws -> MemoryRound {
        counter.pointer.pointee = 0
        let queue = try competitor.makeSuspendedQueue()
        baseline_trim_heap()
        let heapBefore = baseline_heap_in_use()
        let residentBefore = baseline_resident_bytes()
        let start = Clock.nanoseconds()
        queue.fill(n)
        let filled = Clock.nanoseconds()
        let heapAfter = baseline_heap_in_use()
        let residentAfter = baseline_resident_bytes()
        queue.resumeAndDrain()
        let drained = Clock.nanoseconds()
        guard counter.value == Int64(n) else {
            throw PerfError.wrongCount(workload: "\(id) memory", implementation: competitor.name,
                                       expected: n, got: counter.value)
        }
        return MemoryRound(
            heapBytes: (Double(heapAfter) - Double(heapBefore)) / Double(n),
            residentBytes: (Double(residentAfter) - Double(residentBefore)) / Double(n),
            enqueueNs: Double(filled - start) / Double(n),
            drainNs: Double(drained - filled) / Double(n))
    }
}
