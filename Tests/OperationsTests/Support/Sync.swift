// Sync.swift — bounded waits for a latch and for a thread of our own (the lock, the latch, the
// locked value and the threads are in OperationsTestSupport, shared by every test target).
@_exported import OperationsTestSupport
import Foundation
import Glibc
import Testing




/// Waits for `target` arrivals at `latch`; on timeout records an issue naming `what` and returns
/// false (the caller should then stop: what it waited for did not happen).
@discardableResult
func waitFor(_ latch: Latch, _ what: String, count target: Int = 1, seconds: Double = Limits.waitSeconds,
            sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    if latch.wait(for: target, seconds: seconds) { return true }
    Issue.record("timed out after \(seconds) s waiting for \(what) (\(latch.arrivals)/\(target) arrivals)",
                 sourceLocation: sourceLocation)
    return false
}

/// Runs `body` on a new thread and waits for it (bounded). Records an issue on timeout.
func runOnNewThread(_ what: String, seconds: Double = Limits.waitSeconds,
                    sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping @Sendable () -> Void) {
    let done = onNewThread(body)
    waitFor(done, what, seconds: seconds, sourceLocation: sourceLocation)
}
