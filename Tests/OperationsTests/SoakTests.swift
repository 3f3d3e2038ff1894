// SoakTests.swift — many operations in batches with resident memory watched (SEMANTICS O7, D1,
// Q9, Q11): after a warm-up, RSS stays within a few MB however many operations have run. Runs
// only when OPERATIONS_SOAK_OPS is set:
//
//   OPERATIONS_SOAK_OPS=10000000 swift test -c release --filter Soak
//
// OPERATIONS_SOAK_RSS_SLACK_MB sets how far RSS may grow from the end of the warm-up (the first
// tenth of the batches) to its highest in the last quarter (default 4).
import Operations
import Testing

enum SoakConfiguration {
    static let operations: Int? = environmentValue("OPERATIONS_SOAK_OPS").flatMap { Int($0) }
    static let slackBytes: Int = (environmentValue("OPERATIONS_SOAK_RSS_SLACK_MB").flatMap { Int($0) } ?? 4) << 20
    static let batchSize = 100_000
}

/// One batch on a long-lived serial queue, a long-lived default-width queue and a fresh queue
/// of width 3: chains, cancellations, completion blocks and barriers. Each chunk of 1000
/// operations is created and added by a new thread that then exits, as short-lived submitter
/// threads do. Returns whether it finished in time, and records issues.
private func runSoakBatch(_ batch: Int, size: Int, serial: OperationQueue, wide: OperationQueue) -> Bool {
    let fresh = OperationQueue()
    fresh.name = "soak batch \(batch)"
    fresh.maxConcurrentOperationCount = 3
    let queues = [serial, wide, fresh]
    let bodies = Counter()
    let completions = Counter()
    let cancelled = Counter()
    let previous = Locked<Operation?>(nil) // the chain runs through the chunks
    let chunk = 1000
    for start in stride(from: 0, to: size, by: chunk) {
        let submitted = onNewThread {
            var operations: [Operation] = []
            operations.reserveCapacity(chunk)
            for index in start..<min(size, start + chunk) {
                let operation = BlockOperation { bodies.increment() }
                if index % 4 == 0 { operation.completionBlock = { completions.increment() } }
                if index % 16 == 0, let last = previous.withLock({ $0 }) { operation.addDependency(last) }
                if index % 64 == 0 {
                    operation.cancel()
                    cancelled.increment()
                }
                previous.withLock { $0 = operation }
                operations.append(operation)
            }
            queues[(start / chunk) % queues.count].addOperations(operations, waitUntilFinished: false)
            if start % (chunk * 20) == 0 { wide.addBarrierBlock {} }
        }
        guard waitFor(submitted, "the thread adding operations \(start)..< of batch \(batch)", seconds: 120) else { return false }
    }
    previous.withLock { $0 = nil }
    for queue in queues {
        guard waitUntilAllOperationsAreFinished(queue, seconds: 120) else { return false }
    }
    #expect(bodies.current == size - cancelled.current, "batch \(batch): \(bodies.current) bodies ran, expected \(size - cancelled.current)")
    #expect(completions.current == (size + 3) / 4, "batch \(batch): \(completions.current) completion blocks ran")
    return true
}

@Suite(.needsQuietProcess)
struct SoakTests {
    @Test(.enabled(if: SoakConfiguration.operations != nil, "set OPERATIONS_SOAK_OPS=<count> to run the soak"))
    func Q11_manyOperationsInBatchesKeepResidentMemoryConstant() throws {
        let total = try #require(SoakConfiguration.operations)
        let batchSize = min(SoakConfiguration.batchSize, max(1, total / 20))
        let batches = max(1, total / batchSize)
        let warmUp = max(2, batches / 10)
        let serial = OperationQueue()
        serial.name = "soak serial"
        serial.maxConcurrentOperationCount = 1
        let wide = OperationQueue()
        wide.name = "soak wide"
        var afterWarmUp: Int?
        var highest = 0
        var highestLate = 0 // the last quarter of the batches: growth that stays
        let start = ContinuousClock.now
        for batch in 0..<batches {
            guard runSoakBatch(batch, size: batchSize, serial: serial, wide: wide) else { return }
            let resident = try #require(ProcessStats.residentBytes())
            if batch + 1 == warmUp { afterWarmUp = resident }
            highest = max(highest, resident)
            if batch >= batches - max(1, batches / 4) { highestLate = max(highestLate, resident) }
            if batch % max(1, batches / 10) == 0 || batch + 1 == batches {
                print("[SoakTests] batch \(batch + 1)/\(batches): \(batchSize * (batch + 1)) operations, RSS \(resident >> 20) MB")
            }
        }
        let baseline = try #require(afterWarmUp)
        print("[SoakTests] \(batches * batchSize) operations in \(ContinuousClock.now - start); RSS after warm-up \(baseline >> 10) KB, "
            + "highest \(highest >> 10) KB, highest in the last quarter \(highestLate >> 10) KB")
        #expect(highestLate - baseline <= SoakConfiguration.slackBytes,
                "RSS grew by \((highestLate - baseline) >> 10) KB after the warm-up (limit \(SoakConfiguration.slackBytes >> 10) KB)")
    }
}
