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

/// Waits (bounded) until the caller's `object` is the only reference left, so that the object is
/// freed on the calling thread when the caller drops it. Returns false (and records an issue) on
/// timeout.
///
/// For tests whose own threads read an operation a queue ran: ThreadSanitizer does not see
/// Swift's reference counting, so when a queue's worker drops the last reference (the registry's,
/// released when the queue compacts), the operation and its core task are freed there with no
/// edge TSan can see from those reader threads, and it reports their reads as racing with the
/// task memory's reuse. Freed here, after the readers' latches, the order is one TSan sees.
@discardableResult
func waitUntilOnlyReferencedHere<Object: AnyObject>(_ object: inout Object, _ what: String,
                                                    seconds: Double = Limits.waitSeconds,
                                                    sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !isKnownUniquelyReferenced(&object) {
        if ContinuousClock.now > deadline {
            Issue.record("timed out after \(seconds) s waiting for every other reference to \(what) to be dropped",
                         sourceLocation: sourceLocation)
            return false
        }
        quietPeriod(0.001)  // no event says "the queue dropped its reference"; polled, bounded
    }
    return true
}
