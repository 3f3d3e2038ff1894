// Waits.swift — the library's blocking waits, bounded: each runs on a thread of its own and the
// test waits for that thread with a deadline, so a wait that never returns fails the test with a
// message instead of hanging the run.
import Operations
import Testing

/// `operation.waitUntilFinished()` with a deadline. Returns false (and records an issue) on timeout.
@discardableResult
func waitUntilFinished(_ operation: Operation, _ what: String? = nil, seconds: Double = Limits.waitSeconds,
                       sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    // onNewThread releases the closure (and its reference to the operation) before it reports
    // back, so the operation's last release never depends on when Foundation frees the thread.
    let done = onNewThread { operation.waitUntilFinished() }
    return waitFor(done, "waitUntilFinished() of \(what ?? operation.description) to return",
                   seconds: seconds, sourceLocation: sourceLocation)
}

/// `queue.waitUntilAllOperationsAreFinished()` with a deadline.
@discardableResult
func waitUntilAllOperationsAreFinished(_ queue: OperationQueue, seconds: Double = Limits.waitSeconds,
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

/// Runs `body` as synchronous code: for calling the blocking (`noasync`) waits from an async
/// context on purpose, where a test checks what the blocking form does.
func blocking<T>(_ body: () -> T) -> T { body() }
