// Recorders.swift — the runtime's blocking waits with a deadline, and small operations that log
// or signal when they run (the logs, counters and gauges are in OperationsTestSupport).
import Testing

/// A quiet period of the default length (`Deadline.quietSeconds`).
func quietPeriod() { quietPeriod(Deadline.quietSeconds) }

/// `operation.waitUntilFinished()` with a deadline: the wait runs on a thread of its own and
/// the test waits for that thread. Returns false (and records an issue) on timeout.
@discardableResult
func waitUntilFinished(_ operation: Operation, _ what: String? = nil, seconds: Double = Deadline.seconds,
                       sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let done = onNewThread { operation.waitUntilFinished() }
    return waitFor(done, "waitUntilFinished() of \(what ?? operation.description) to return",
                   seconds: seconds, sourceLocation: sourceLocation)
}

/// `queue.waitUntilAllOperationsAreFinished()` with a deadline.
@discardableResult
func waitUntilAllOperationsAreFinished(_ queue: OperationQueue, seconds: Double = Deadline.seconds,
                                       sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let done = onNewThread { queue.waitUntilAllOperationsAreFinished() }
    return waitFor(done, "waitUntilAllOperationsAreFinished() of \(queue) to return (operationCount \(queue.operationCount))",
                   seconds: seconds, sourceLocation: sourceLocation)
}

/// A `BlockOperation` named `name` that appends `name` to `log` when it runs.
func loggingOperation(_ name: String, _ log: Recorder<String>) -> BlockOperation {
    let operation = BlockOperation { log.append(name) }
    operation.name = name
    return operation
}

/// A `BlockOperation` that opens `latch` when it runs.
func signallingOperation(_ latch: Latch, name: String? = nil) -> BlockOperation {
    let operation = BlockOperation { latch.open() }
    operation.name = name
    return operation
}
