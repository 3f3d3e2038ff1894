// Recorders.swift — thread-safe logs and counters that operation bodies write to, a concurrency
// gauge, quiet periods, the runtime's blocking waits with a deadline, and small operations
// that log or signal when they run.
import Testing

/// Sleeps `seconds`. Only for "nothing may happen during this time" checks, never as
/// synchronisation.
func quietPeriod(_ seconds: Double = Deadline.quietSeconds) {
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// A log of values in the order they were appended, from any thread.
final class Recorder<Element: Sendable>: @unchecked Sendable {
    private let values = Locked<[Element]>([])
    init() {}
    func append(_ value: Element) { values.withLock { $0.append(value) } }
    var snapshot: [Element] { values.withLock { $0 } }
    var count: Int { values.withLock { $0.count } }
}

/// A counter, from any thread.
final class Counter: @unchecked Sendable {
    private let value = Locked(0)
    init() {}
    /// Adds one and returns the new value.
    @discardableResult
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
    var current: Int { value.withLock { $0 } }
}

/// Counts bodies that run at the same time and remembers the most seen at once.
final class ConcurrencyGauge: @unchecked Sendable {
    private let state = Locked((now: 0, max: 0))
    init() {}
    func enter() { state.withLock { $0.now += 1; $0.max = Swift.max($0.max, $0.now) } }
    func leave() { state.withLock { $0.now -= 1 } }
    var maximum: Int { state.withLock { $0.max } }
}

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
